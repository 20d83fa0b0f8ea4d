//! Sprig's `getHostByName`, which resolves a DNS name. In pull mode the publisher
//! renders for clusters it cannot see, from a machine whose resolver says nothing about
//! them, and a rendered bundle must not change with the publisher's DNS: the function
//! fails the render, naming why, and never touches the network.

use super::args::{Func, str_arg, table};
use crate::render::template::session::{Unavailable, unavailable};

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[(&["getHostByName"], |a| {
        str_arg("getHostByName", a, 1, 0)?;
        Err(unavailable("getHostByName", Unavailable::PullMode))
    })])
}
