//! dsh-web's integration tests: the API over real HTTP on 127.0.0.1.

mod suite;
