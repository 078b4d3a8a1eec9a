"""Triton kernels, one per file, each with a plain-torch twin of the same signature.

``<name>_torch`` runs anywhere; ``<name>_triton`` needs CUDA (or TRITON_INTERPRET=1 set before this
package is imported, as tests/gpu/conftest.py does). ``<name>(..., backend="torch" | "triton")``
dispatches. The twins define the semantics; tests/gpu/test_loong_kernels.py checks equality.
"""
