"""What ships inside a metered bot: C sources, int8 code generation, the wasm build and the judge."""
