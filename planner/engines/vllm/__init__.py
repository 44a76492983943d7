"""vLLM as the planner sees it: its KV cache grouping (`layout`), the accounting rules that changed
release by release (`rules`, `gdn_checkpoints`), the start-up log it prints and how hkv reads and
explains one (`log`, `memory_lines`, `logged_*`, `log_*`), and the `vllm serve` command and
environment that realize a plan (`serve_command`, `serve_env`)."""
