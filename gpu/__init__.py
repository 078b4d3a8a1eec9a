"""Everything that imports torch or triton: networks, Lightning modules, batched simulators, kernels."""
