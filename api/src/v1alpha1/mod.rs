//! v1alpha1: the historical shapes of lib.projectsveltos.io that users' older YAML uses,
//! accepted and converted losslessly into v1beta1.

mod event_source;
mod event_trigger;

pub use event_source::*;
pub use event_trigger::*;
