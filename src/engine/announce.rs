//! Announcing to a torrent's trackers in tiers (BEP 12).
//!
//! Tiers are tried in order; within a tier, trackers are tried in order and the first that
//! answers moves to the front of its tier, so the next announce goes to it first. The
//! first tier with a working tracker ends the announce. BEP 12 asks clients to shuffle each
//! tier once when the torrent is loaded; we do.

use crate::tracker::http::HttpTracker;
use crate::tracker::{AnnounceRequest, AnnounceResponse};

/// A torrent's trackers, grouped in tiers.
#[derive(Debug, Clone)]
pub struct Trackers {
    tiers: Vec<Vec<String>>,
}

impl Trackers {
    /// From the metainfo's tiers (`announce-list`, or `[[announce]]`); each tier shuffled.
    pub fn new(tiers: &[Vec<String>]) -> Trackers {
        use rand::seq::SliceRandom;
        let mut tiers: Vec<Vec<String>> = tiers.iter().filter(|t| !t.is_empty()).cloned().collect();
        for t in &mut tiers {
            t.shuffle(&mut rand::rng());
        }
        Trackers { tiers }
    }

    /// No trackers at all.
    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty()
    }

    /// The tiers in their current order.
    pub fn tiers(&self) -> &[Vec<String>] {
        &self.tiers
    }

    /// Announce `req`, trying tiers and trackers in order (BEP 12).
    ///
    /// # Errors
    /// Every tracker failed: the errors joined as "url: error; ...". Announce URLs may hold
    /// passkeys, so only the host part is shown.
    pub async fn announce(
        &mut self,
        http: &HttpTracker,
        req: &AnnounceRequest,
    ) -> Result<AnnounceResponse, String> {
        let mut errors = Vec::new();
        for tier in &mut self.tiers {
            for i in 0..tier.len() {
                match http.announce(&tier[i], req).await {
                    Ok(resp) => {
                        let url = tier.remove(i);
                        tier.insert(0, url);
                        return Ok(resp);
                    }
                    Err(e) => errors.push(format!("{}: {e}", host_of(&tier[i]))),
                }
            }
        }
        if errors.is_empty() {
            Err("no trackers".into())
        } else {
            Err(errors.join("; "))
        }
    }
}

/// `scheme://host:port` of a URL, without path or query (which may hold a passkey).
pub fn host_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?']).next().unwrap_or("");
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_hides_passkeys() {
        assert_eq!(
            host_of("http://t.example:80/abcdef/announce?pk=1"),
            "http://t.example:80"
        );
        assert_eq!(host_of("udp://t.example:6969"), "udp://t.example:6969");
        assert_eq!(host_of("weird"), "weird");
    }

    #[test]
    fn empty_tiers_are_dropped() {
        let t = Trackers::new(&[vec![], vec!["http://a/announce".into()]]);
        assert_eq!(t.tiers().len(), 1);
        assert!(Trackers::new(&[]).is_empty());
    }
}
