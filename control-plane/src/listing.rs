//! What a listing read from the control plane found: the entries it could
//! read, and those it left out because they are damaged (written into
//! etcd by something else than wray, or by a bug): one bad entry hides
//! only itself, and is named, never a failure of the whole listing.

/// Most skipped entries a listing names ([`Listed::skipped`]); more are
/// counted in [`Listed::more_skipped`].
pub const MAX_SKIPPED: usize = 100;

/// An entry a listing left out: its name, its key and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The name the entry is listed under (a component's name, an actor's),
    /// as read from its key (lossy UTF-8).
    pub name: String,
    /// Its key in the control plane.
    pub key: String,
    /// Why it could not be read.
    pub error: String,
}

/// A listing's entries and the damaged ones it left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<T> {
    /// The entries read.
    pub entries: Vec<T>,
    /// The entries left out, the first [`MAX_SKIPPED`].
    pub skipped: Vec<Skipped>,
    /// Entries left out past [`MAX_SKIPPED`].
    pub more_skipped: usize,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            entries: Vec::new(),
            skipped: Vec::new(),
            more_skipped: 0,
        }
    }
}

impl<T> Listed<T> {
    /// A listing of `entries`, none left out.
    pub fn all(entries: Vec<T>) -> Self {
        Listed {
            entries,
            ..Listed::default()
        }
    }

    /// Leaves out the entry `name` under `key`, with a warning naming
    /// `what` (the listing).
    pub fn skip(&mut self, what: &str, name: &str, key: &str, error: &crate::Error) {
        tracing::warn!("{what}: left out of the listing: {error}");
        if self.skipped.len() < MAX_SKIPPED {
            self.skipped.push(Skipped {
                name: name.to_string(),
                key: key.to_string(),
                error: error.to_string(),
            });
        } else {
            self.more_skipped = self.more_skipped.saturating_add(1);
        }
    }
}
