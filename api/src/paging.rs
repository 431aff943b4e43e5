//! Listings that can grow answer a page at a time: `?limit=N` (at most
//! [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when unsaid) entries after the cursor
//! `?after=C`, and the cursor of the next page (`next`, absent on the
//! last page).

use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

/// Entries of a page when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 100;

/// The most entries one page may ask for (a larger `limit` is a 400).
pub const MAX_LIMIT: usize = 1000;

/// The query of a paginated listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Entries to answer, 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Answer the entries after this one: the `next` of the previous
    /// page.
    pub after: Option<String>,
}

impl ListQuery {
    /// The query string (`?limit=..&after=..`, values percent-encoded;
    /// empty when neither is set).
    pub fn to_query(&self) -> String {
        let mut pairs = Vec::new();
        if let Some(limit) = self.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(after) = &self.after {
            pairs.push(format!("after={}", crate::encode(after)));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

/// `GET /v1/tasks`' and `GET /v1/actors`' filter, beside their
/// [`ListQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobFilter {
    /// Only the tasks (or actors) of this job (its id, 16 hex digits): its
    /// driver, and every task, actor and actor call it led to on this node.
    pub job: Option<String>,
}
