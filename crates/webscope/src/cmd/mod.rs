//! One module per subcommand: its flags (`Args`) and the `run` function that turns them into
//! a library call.

pub mod compare;
pub mod distribute;
pub mod fileset;
pub mod lab;
pub mod load;
pub mod merge;
pub mod model;
pub mod monitor;
pub mod report;
pub mod serve;
