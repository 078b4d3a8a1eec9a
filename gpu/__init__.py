"""Everything that imports torch or triton: networks, Lightning modules, batched simulators, kernels; and one
torch-free table beside them, the expert network's shapes (``gpu.loong_shapes``), which the wasm bot's build reads."""
