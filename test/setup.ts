// Loaded before every test file, as every entry point loads them before anything else.
import "../src/platform/polyfill.js"
import "../src/platform/biscuit-wasm.js"
