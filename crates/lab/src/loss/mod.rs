//! The loss experiment (`lab --experiment protocols --loss 1%,3% --rtt 20ms`): HTTP/2 and
//! HTTP/3 page loads over a link that delays and drops packets, made by [`relay`] between two
//! network namespaces.

pub mod relay;
