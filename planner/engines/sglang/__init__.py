"""SGLang as the planner sees it. Pure Python: never imports torch.

Owns SGLang's sizing, release by release (0.5.10 to 0.5.23, `--sglang-version`):

    server_args        SglangServerArgs: the server arguments that change sizing, SGLang's defaults
    rules              SglangRules: the sizing rules that changed between releases
    served_architectures, architectures
                       which architectures SGLang serves, and how it treats them (hybrid SWA, one
                       forced pool, MLA, multimodal, Mamba radix strategy)
    config_extras      the config.json values SGLang reads that ModelSpec does not keep
    model_view         SglangModel: the model as SGLang sizes it, or a one-line refusal
    mem_fraction       the default mem_fraction_static from the card's memory and the arguments
    budget             SglangBudget: rest = free after weights - free before load x (1 - mfs)
    cell_bytes         bytes one token costs per pool (MHA, MLA, DSA, sliding), as SGLang counts
    mamba_state        one request's recurrent state slot, slots held per running request
    mamba_pool         the state pool carved out of the rest
    token_pools        full / hybrid-SWA token pools from bytes (both SWA split formulas)
    running_requests   max_running_requests and its caps
    pool_resolution    resolve_pools: the rest -> SglangPools
    pools              SglangPools (the contract the oracle, the CLI and the log reader share)
    concurrency        max-length requests the pools hold at once (hkv's estimate)
    startup_lines      the start-up lines SGLang prints about its pools
    plan               plan_sglang: GPU + model + arguments -> SglangPlan

The start-up log reader (`log`, `log_explanation`) and the launch command (`launch_command`) live
here too. Every formula is hkv's own reading of SGLang's source, checked against SGLang's own code
by the oracle tests (tests/oracle/sglang_side/).
"""
