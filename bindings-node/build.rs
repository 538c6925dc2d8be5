//! Build script of the Node.js addon: napi-build sets the linker flags a native Node module needs.

fn main() {
    napi_build::setup();
}
