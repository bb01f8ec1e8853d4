//! Who may read `/metrics` and `/plugins` on a secure listener, as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` decides it: the caller's bearer token is sent to
//! the apiserver in a TokenReview, and the user it names in a SubjectAccessReview for `get` on
//! the request's path (a non-resource URL, granted by a ClusterRole's `nonResourceURLs`).
//!
//! No token, or one the apiserver does not authenticate, is a 401; a user RBAC does not allow is
//! a 403. Decisions are cached by the token's SHA-256 and the path for [`DECISION_TTL`], at most
//! [`DECISION_CAPACITY`] of them, so a scrape every few seconds costs the apiserver two reviews
//! per TTL rather than per scrape. The cache's lock is never held across an `.await`; the
//! reviews of two concurrent misses both go to the apiserver.
//!
//! Whoever reaches the port can make up tokens, and each one the cache has not seen would cost
//! the apiserver a review sent with the operator's identity. So reviews are bounded: at most
//! [`REVIEW_RATE`] (a token bucket) and [`MAX_CONCURRENT_REVIEWS`] at once, across all callers. A
//! request over either bound is answered 429 with `Retry-After` ([`Decision::Throttled`]) and
//! costs the apiserver nothing; it is counted in `wasmop_http_review_refusals_total{reason}`.
//! Cached decisions are answered whatever the bounds, so a scraper whose token was reviewed in
//! the last [`DECISION_TTL`] is served during a flood; a new one waits its turn with the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::StatusCode;
use hyper::header::{AUTHORIZATION, HeaderMap};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::rate::TokenBucket;
use wasmop_contract::Rate;

/// How long a decision is reused.
pub const DECISION_TTL: Duration = Duration::from_secs(10);

/// The most decisions kept.
pub const DECISION_CAPACITY: usize = 1024;

/// The most reviews of uncached tokens sent per second, and the burst allowed at once; each may
/// cost a TokenReview and a SubjectAccessReview.
pub const REVIEW_RATE: Rate = Rate::new(5.0, 10);

/// The most reviews in flight at once.
pub const MAX_CONCURRENT_REVIEWS: usize = 4;

/// The `Retry-After` of a request refused because [`MAX_CONCURRENT_REVIEWS`] are in flight.
const BUSY_RETRY: Duration = Duration::from_secs(1);

/// The longest bearer token sent for review; a longer one is refused without asking.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A review could not be asked of the apiserver.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The TokenReview failed.
    #[error("reviewing a bearer token with the apiserver: {0}")]
    TokenReview(#[source] kube::Error),
    /// The SubjectAccessReview failed.
    #[error("asking the apiserver whether {user} may get {path}: {source}")]
    AccessReview {
        /// The authenticated user.
        user: String,
        /// The path asked about.
        path: &'static str,
        /// Why.
        source: kube::Error,
    },
}

/// What the apiserver said about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The caller may read the path.
    Allowed,
    /// No bearer token, or one the apiserver does not authenticate (401).
    Unauthenticated,
    /// An authenticated user RBAC does not allow to read the path (403).
    Forbidden {
        /// The user.
        user: String,
        /// The path.
        path: &'static str,
    },
    /// A token not reviewed recently, over the bounds on reviews (429): ask again after
    /// `retry_after`.
    Throttled {
        /// How long until a review may be sent.
        retry_after: Duration,
    },
}

impl Decision {
    /// The HTTP status and body of a refusal; `None` when allowed.
    pub fn refusal(&self) -> Option<(StatusCode, String)> {
        match self {
            Decision::Allowed => None,
            Decision::Unauthenticated => Some((StatusCode::UNAUTHORIZED, "Unauthorized".into())),
            Decision::Forbidden { user, path } => Some((
                StatusCode::FORBIDDEN,
                format!("Forbidden: user {user:?} may not get {path}"),
            )),
            Decision::Throttled { retry_after } => Some((
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too many tokens to review: retry after {} s",
                    retry_seconds(*retry_after)
                ),
            )),
        }
    }

    /// The `Retry-After` of a throttled request, in whole seconds.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Decision::Throttled { retry_after } => Some(retry_seconds(*retry_after)),
            _ => None,
        }
    }
}

/// `wait` in whole seconds, at least one.
fn retry_seconds(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().clamp(1.0, 3600.0) as u64
}

/// Authenticates and authorizes requests with the apiserver, remembering recent decisions.
pub struct Authorizer {
    client: kube::Client,
    decisions: Mutex<Decisions>,
    reviews: Mutex<TokenBucket>,
    in_flight: Semaphore,
    metrics: Arc<Metrics>,
}

impl Authorizer {
    /// An authorizer asking the apiserver behind `client`, which must be allowed to create
    /// TokenReviews and SubjectAccessReviews, and counting its refusals in `metrics`.
    pub fn new(client: kube::Client, metrics: Arc<Metrics>) -> Self {
        Authorizer {
            client,
            decisions: Mutex::new(Decisions::new(DECISION_TTL, DECISION_CAPACITY)),
            reviews: Mutex::new(TokenBucket::new(REVIEW_RATE)),
            in_flight: Semaphore::new(MAX_CONCURRENT_REVIEWS),
            metrics,
        }
    }

    /// Whether the request with `headers` may `get` `path`.
    pub async fn authorize(
        &self,
        headers: &HeaderMap,
        path: &'static str,
    ) -> Result<Decision, AuthError> {
        let Some(token) = bearer_token(headers) else {
            return Ok(Decision::Unauthenticated);
        };
        let key = (Sha256::digest(token.as_bytes()).into(), path);
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let Ok(_permit) = self.in_flight.try_acquire() else {
            self.metrics.review_refused("concurrency");
            let retry_after = BUSY_RETRY;
            return Ok(Decision::Throttled { retry_after });
        };
        let taken = self
            .reviews
            .lock()
            .expect("review bucket poisoned")
            .try_take();
        if let Err(retry_after) = taken {
            self.metrics.review_refused("rate");
            return Ok(Decision::Throttled { retry_after });
        }
        let decision = self.review(token, path).await?;
        let mut decisions = self.decisions.lock().expect("decision cache poisoned");
        decisions.insert(key, decision.clone(), Instant::now());
        Ok(decision)
    }

    fn cached(&self, key: &Key) -> Option<Decision> {
        let mut decisions = self.decisions.lock().expect("decision cache poisoned");
        decisions.get(key, Instant::now())
    }

    /// A TokenReview of `token`, then a SubjectAccessReview of its user for `get path`.
    async fn review(&self, token: &str, path: &'static str) -> Result<Decision, AuthError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(AuthError::TokenReview)?;
        let Some(user) = authenticated(reviewed) else {
            return Ok(Decision::Unauthenticated);
        };
        let name = user.username.clone().unwrap_or_default();
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let reviewed = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| AuthError::AccessReview {
                user: name.clone(),
                path,
                source,
            })?;
        match reviewed.status.is_some_and(|status| status.allowed) {
            true => Ok(Decision::Allowed),
            false => Ok(Decision::Forbidden { user: name, path }),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    let usable = scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES;
    usable.then_some(token)
}

/// The user a TokenReview authenticated, if it did.
fn authenticated(review: TokenReview) -> Option<UserInfo> {
    let status = review.status?;
    let user = status.user.filter(|_| status.authenticated == Some(true))?;
    user.username
        .as_ref()
        .is_some_and(|name| !name.is_empty())
        .then_some(user)
}

/// A decision's key: the token's SHA-256 (never the token) and the path.
type Key = ([u8; 32], &'static str);

/// Recent decisions, each kept for `ttl`, at most `capacity` of them.
struct Decisions {
    entries: HashMap<Key, (Decision, Instant)>,
    ttl: Duration,
    capacity: usize,
}

impl Decisions {
    fn new(ttl: Duration, capacity: usize) -> Self {
        Decisions {
            entries: HashMap::new(),
            ttl,
            capacity,
        }
    }

    /// The decision for `key` unless it has expired at `now`.
    fn get(&mut self, key: &Key, now: Instant) -> Option<Decision> {
        match self.entries.get(key) {
            Some((decision, expires)) if *expires > now => Some(decision.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers `decision` from `now`; when full, expired decisions go first, then the one
    /// expiring soonest.
    fn insert(&mut self, key: Key, decision: Decision, now: Instant) {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.entries.retain(|_, (_, expires)| *expires > now);
            if self.entries.len() >= self.capacity {
                let soonest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, expires))| *expires)
                    .map(|(key, _)| *key);
                if let Some(soonest) = soonest {
                    self.entries.remove(&soonest);
                }
            }
        }
        self.entries.insert(key, (decision, now + self.ttl));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::TokenReviewStatus;

    fn key(token: &str, path: &'static str) -> Key {
        (Sha256::digest(token.as_bytes()).into(), path)
    }

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, authorization.parse().unwrap());
        headers
    }

    #[test]
    fn only_a_bearer_token_is_taken() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(&headers("Basic YWxhZGRpbjpvcGVu")), None);
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(bearer_token(&headers(&long)), None);
    }

    #[test]
    fn a_throttled_request_is_a_429_with_whole_seconds_to_wait() {
        let throttled = Decision::Throttled {
            retry_after: Duration::from_millis(200),
        };
        let (status, _) = throttled.refusal().unwrap();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(throttled.retry_after(), Some(1));
        let later = Decision::Throttled {
            retry_after: Duration::from_millis(2100),
        };
        assert_eq!(later.retry_after(), Some(3));
        assert_eq!(Decision::Unauthenticated.retry_after(), None);
    }

    /// An authorizer whose apiserver never answers.
    fn unreachable() -> Authorizer {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        Authorizer::new(client, Arc::new(Metrics::new()))
    }

    #[tokio::test(start_paused = true)]
    async fn uncached_tokens_beyond_the_rate_are_throttled_without_a_review() {
        let authorizer = unreachable();
        // Spend the burst as reviews would, then every new token is refused unreviewed.
        for _ in 0..REVIEW_RATE.burst {
            assert_eq!(authorizer.reviews.lock().unwrap().try_take(), Ok(()));
        }
        for n in 0..20 {
            let decision = authorizer
                .authorize(&headers(&format!("Bearer made-up-{n}")), "/metrics")
                .await
                .unwrap();
            assert!(
                matches!(decision, Decision::Throttled { .. }),
                "{decision:?}"
            );
        }
        // A decision already cached is answered whatever the bounds.
        let cached = key("known", "/metrics");
        let now = Instant::now();
        authorizer
            .decisions
            .lock()
            .unwrap()
            .insert(cached, Decision::Allowed, now);
        let decision = authorizer
            .authorize(&headers("Bearer known"), "/metrics")
            .await
            .unwrap();
        assert_eq!(decision, Decision::Allowed);
        let text = authorizer.metrics.gather();
        assert!(
            text.contains(r#"wasmop_http_review_refusals_total{reason="rate"} 20"#),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reviews_in_flight_are_capped() {
        let authorizer = unreachable();
        let held = authorizer
            .in_flight
            .try_acquire_many(MAX_CONCURRENT_REVIEWS as u32)
            .unwrap();
        let decision = authorizer
            .authorize(&headers("Bearer one-more"), "/metrics")
            .await
            .unwrap();
        assert_eq!(
            decision,
            Decision::Throttled {
                retry_after: BUSY_RETRY
            }
        );
        drop(held);
        let text = authorizer.metrics.gather();
        assert!(
            text.contains(r#"wasmop_http_review_refusals_total{reason="concurrency"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn refusals_map_to_401_and_403() {
        assert_eq!(Decision::Allowed.refusal(), None);
        let (status, _) = Decision::Unauthenticated.refusal().unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let forbidden = Decision::Forbidden {
            user: "system:serviceaccount:a:b".into(),
            path: "/metrics",
        };
        let (status, body) = forbidden.refusal().unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(body.contains("system:serviceaccount:a:b"), "{body}");
        assert!(body.contains("/metrics"), "{body}");
    }

    #[test]
    fn only_an_authenticated_review_with_a_user_authenticates() {
        let review = |authenticated, username: Option<&str>| TokenReview {
            status: Some(TokenReviewStatus {
                authenticated: Some(authenticated),
                user: Some(UserInfo {
                    username: username.map(Into::into),
                    ..UserInfo::default()
                }),
                ..TokenReviewStatus::default()
            }),
            ..TokenReview::default()
        };
        assert!(authenticated(review(true, Some("alice"))).is_some());
        assert!(authenticated(review(false, Some("alice"))).is_none());
        assert!(authenticated(review(true, Some(""))).is_none());
        assert!(authenticated(review(true, None)).is_none());
        assert!(authenticated(TokenReview::default()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn decisions_expire_after_the_ttl() {
        let mut decisions = Decisions::new(Duration::from_secs(10), 8);
        let allowed = key("a", "/metrics");
        decisions.insert(allowed, Decision::Allowed, Instant::now());
        assert_eq!(decisions.get(&key("a", "/plugins"), Instant::now()), None);
        assert_eq!(decisions.get(&key("b", "/metrics"), Instant::now()), None);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(
            decisions.get(&allowed, Instant::now()),
            Some(Decision::Allowed)
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(decisions.get(&allowed, Instant::now()), None);
        assert_eq!(
            decisions.len(),
            0,
            "an expired decision is dropped when met"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_expired_then_the_soonest_to_expire() {
        let mut decisions = Decisions::new(Duration::from_secs(10), 2);
        decisions.insert(key("old", "/metrics"), Decision::Allowed, Instant::now());
        tokio::time::advance(Duration::from_secs(1)).await;
        decisions.insert(key("new", "/metrics"), Decision::Allowed, Instant::now());
        decisions.insert(
            key("newest", "/metrics"),
            Decision::Unauthenticated,
            Instant::now(),
        );
        assert_eq!(decisions.len(), 2);
        assert_eq!(decisions.get(&key("old", "/metrics"), Instant::now()), None);
        assert_eq!(
            decisions.get(&key("new", "/metrics"), Instant::now()),
            Some(Decision::Allowed)
        );
        // Replacing a present key never evicts another.
        decisions.insert(key("new", "/metrics"), Decision::Allowed, Instant::now());
        assert_eq!(decisions.len(), 2);
        tokio::time::advance(Duration::from_secs(10)).await;
        decisions.insert(key("later", "/plugins"), Decision::Allowed, Instant::now());
        assert_eq!(
            decisions.len(),
            1,
            "expired decisions go before any live one"
        );
    }
}
