//! Go text/template engine with Sprig and Sveltos functions.
