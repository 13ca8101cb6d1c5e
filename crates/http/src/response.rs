//! HTTP/1.1 response head parsing for the load generator (owned by the load-generator work).
