//! The HTTP/1.1 response head `respond.rs` wrote, read back into the response of a protocol
//! that carries fields as a map (HTTP/2 in `epoll/h2.rs`, HTTP/3 in `quic/`): one response
//! builder for every protocol, so a 304 or a 416 cannot differ between them. Re-reading a
//! head just written costs well under a microsecond.

use http::{HeaderMap, Response, StatusCode};
use webscope_http::request::{Body, Method, Request, Version};

/// Reads an HTTP/1.1 response head into an HTTP/2 or HTTP/3 response; returns it and the
/// head's length.
pub(crate) fn translate(out: &[u8]) -> Option<(Response<()>, usize)> {
    let mut fields = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut fields);
    let httparse::Status::Complete(len) = head.parse(out).ok()? else {
        return None;
    };
    let status = StatusCode::from_u16(head.code?).ok()?;
    let mut headers = HeaderMap::with_capacity(head.headers.len());
    for field in head.headers.iter() {
        let name = http::HeaderName::from_bytes(field.name.as_bytes()).ok()?;
        // RFC 9113 §8.2.2 and RFC 9114 §4.2: connection-specific fields are not sent in
        // HTTP/2 nor HTTP/3.
        if matches!(
            name.as_str(),
            "connection" | "keep-alive" | "transfer-encoding" | "upgrade" | "proxy-connection"
        ) {
            continue;
        }
        headers.append(name, http::HeaderValue::from_bytes(field.value).ok()?);
    }
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Some((response, len))
}

/// The [`Request`] an HTTP/1.1 parse would have made of a request that came as a field map
/// (HTTP/3; `epoll/h2.rs` builds its own the same way): the target from `:path`, the host
/// from `:authority` or Host, the fields `respond.rs` reads. Its body, if any, is not read.
pub(crate) fn request(parts: &http::request::Parts) -> Request<'_> {
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().as_bytes())
        .or_else(|| parts.headers.get(http::header::HOST).map(|v| v.as_bytes()));
    let field = |name: http::header::HeaderName| parts.headers.get(name).map(|v| v.as_bytes());
    let method_name = parts.method.as_str();
    Request {
        method: Method::classify(method_name),
        method_name,
        target,
        version: Version::Http11,
        host,
        conn_close: false,
        conn_keep_alive: false,
        body: Body::None,
        if_modified_since: field(http::header::IF_MODIFIED_SINCE),
        if_none_match: field(http::header::IF_NONE_MATCH),
        if_match: field(http::header::IF_MATCH),
        if_unmodified_since: field(http::header::IF_UNMODIFIED_SINCE),
        range: field(http::header::RANGE),
        if_range: field(http::header::IF_RANGE),
        referer: field(http::header::REFERER),
        user_agent: field(http::header::USER_AGENT),
        head_len: 0,
    }
}
