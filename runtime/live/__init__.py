"""hkv.runtime.live: a real model run through hkv's KV cache (torch only).

It owns loading a local Hugging Face checkpoint, the paged KV tensors allocated from the Layout,
the runner's block tables, the attention hook that routes transformers' attention into hkv's
kernels, the model runner, the sampler, prompt files and the run report that compares what the
cache really held with the plan. Nothing outside this package imports torch.
"""
