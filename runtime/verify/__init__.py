"""hkv.runtime.verify: the real vLLM engine as the judge of a plan (`hkv verify`).

It owns the driver script that runs under an interpreter with vLLM (importing only vllm and the
standard library, never hkv), hkv's side of that line protocol, the engine arguments translated
from a plan (with the CPU platform's differences), the parser of vLLM's start-up log, the search
for the sustained concurrency vLLM really reaches, and the checks that compare all of it with
the plan. No torch: vLLM runs in its own process.
"""
