//! The token file: 0644 refused naming the path and mode, 0600 accepted.

use std::os::unix::fs::PermissionsExt;

use wray_peer::{ConfigError, PeerConfig};

#[test]
fn a_token_file_readable_by_others_is_refused_and_0600_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, b"0123456789abcdef0123\n").unwrap();

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = PeerConfig::token_from_file(&path).unwrap_err();
    assert!(
        matches!(e, ConfigError::TokenMode { mode: 0o644, .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("0644"),
        "{msg}"
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(PeerConfig::token_from_file(&path).is_err());

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let token = PeerConfig::token_from_file(&path).unwrap();
    assert_eq!(token.as_bytes(), b"0123456789abcdef0123");

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert!(PeerConfig::token_from_file(&path).is_ok());
}

#[test]
fn a_short_token_in_a_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, b"short\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let e = PeerConfig::token_from_file(&path).unwrap_err();
    assert!(matches!(e, ConfigError::TokenLength { len: 5, .. }), "{e}");
}
