//! The string of a template value: shared, and one pointer wide, so that a whole
//! [`Value`](crate::Value) is two words. (`Rc<str>` is two words on its own; the executor
//! moves values through every call, and the two-word value with boxed errors made a cached
//! render 8% faster.)

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

/// A shared, unchangeable string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Text(Rc<Box<str>>);

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self.0, f)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(Rc::new(Box::from(s)))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text(Rc::new(s.into_boxed_str()))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Self {
        Text::from(s.as_str())
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Self {
        Text(Rc::new(s))
    }
}

impl From<std::borrow::Cow<'_, str>> for Text {
    fn from(s: std::borrow::Cow<'_, str>) -> Self {
        Text::from(s.into_owned())
    }
}
