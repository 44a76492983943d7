"""The KV cache budget of one rank, before any block is counted.

Owns everything between "this GPU, this checkpoint, these flags" and vLLM's "Available KV cache
memory": the GPU table (total memory, unified-memory devices), the weights as vLLM loads and
shards them (quantization formats, multimodal towers, backend padding), the memory profile of a
release (activations, sampler, encoder, CUDA graphs, non-torch), each release's defaults, and the
band of uncertainty each term carries. Pure: no torch, no I/O.
"""
