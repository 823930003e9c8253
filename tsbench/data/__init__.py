"""Phase 1, generate: datasets, schemas and use cases, the C simulator behind the only
cffi module (native), generated data files and the batches the load phase cuts from them."""
