"""Load a Hugging Face causal LM and its tokenizer from a local directory; never the hub.

Multimodal checkpoints (Gemma 3, Llama 4, Gemma 3n, Mistral 3: a config with `text_config`) load
their language model only: the causal-LM class of the text config, with the checkpoint's
`language_model.` prefixes mapped onto it; the vision and audio towers stay on disk.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

from hkv.model_specs.errors import InputError  # noqa: E402

# Checkpoint key prefixes of a multimodal model's language part -> the text causal LM's keys.
_TEXT_KEY_MAPPING = {
    r"^language_model\.lm_head\.": "lm_head.",
    r"^language_model\.model\.": "model.",
    r"^model\.language_model\.": "model.",
    r"^language_model\.": "model.",
}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
_NAMED_MISSING = 3  # missing tensors named in the error; the rest are counted


class ModelLoadError(InputError):
    """The directory cannot be loaded as a causal LM (no weights, unknown architecture, ...)."""


def check_model_dir(model_dir: str | Path) -> Path:
    """The directory, if it holds config.json and safetensors weights; else ModelLoadError."""
    path = Path(model_dir).expanduser()
    if not path.is_dir():
        raise ModelLoadError(f"{model_dir}: not a directory; expected a local model directory "
                             "(config.json + *.safetensors)")
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{model_dir}: no config.json; expected a Hugging Face model directory")
    if not any(path.glob("*.safetensors")):
        raise ModelLoadError(f"{model_dir}: no *.safetensors weights (hkv run reads safetensors only)")
    return path


def _quiet_transformers() -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def load_config(model_dir: Path) -> Any:
    """The transformers config of the directory; ModelLoadError for unknown architectures."""
    _quiet_transformers()
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model_dir, local_files_only=True)
    except (ValueError, KeyError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"{model_dir}: unsupported architecture ({first})") from None


def model_dtype(config: Any) -> torch.dtype:
    """The dtype the checkpoint declares (text config first), float32 when it declares none."""
    for cfg in (config.get_text_config(), config):
        dtype = getattr(cfg, "dtype", None) or getattr(cfg, "torch_dtype", None)
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype.removeprefix("torch."), None)
        if isinstance(dtype, torch.dtype):
            return dtype
    return torch.float32


def load_causal_lm(model_dir: Path, config: Any, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """The causal LM in eval mode on `device`; the language model alone for multimodal configs."""
    _quiet_transformers()
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    text_config = config.get_text_config()
    try:
        if text_config is config:
            model, info = AutoModelForCausalLM.from_pretrained(
                model_dir, config=config, dtype=dtype, local_files_only=True, use_safetensors=True,
                output_loading_info=True)
        else:
            model_class = MODEL_FOR_CAUSAL_LM_MAPPING.get(type(text_config), None)
            if model_class is None:
                raise ModelLoadError(f"{model_dir}: no causal LM class for text config "
                                     f"{type(text_config).__name__}")
            model, info = model_class.from_pretrained(
                model_dir, config=text_config, dtype=dtype, local_files_only=True, use_safetensors=True,
                key_mapping=_TEXT_KEY_MAPPING, output_loading_info=True)
    except ModelLoadError:
        raise
    except (ValueError, KeyError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"{model_dir}: cannot load the model ({first})") from None
    _check_no_missing_weights(model_dir, type(model).__name__, info["missing_keys"])
    return model.to(device).eval()


def _check_no_missing_weights(model_dir: Path, class_name: str, missing_keys: Any) -> None:
    """ModelLoadError naming the first missing tensors: transformers would initialise them at
    random, and a run on random weights is no run of this model."""
    missing = sorted(missing_keys)
    if not missing:
        return
    named = ", ".join(missing[:_NAMED_MISSING])
    more = f" and {len(missing) - _NAMED_MISSING} more" if len(missing) > _NAMED_MISSING else ""
    raise ModelLoadError(f"{model_dir}: the checkpoint lacks {len(missing)} tensor(s) that {class_name} "
                         f"needs: {named}{more}")


def load_tokenizer(model_dir: Path) -> Any | None:
    """The tokenizer saved in the directory, or None when it holds no tokenizer files."""
    if not any((model_dir / name).is_file() for name in _TOKENIZER_FILES):
        return None
    _quiet_transformers()
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        if (model_dir / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        if (model_dir / "tokenizer.json").is_file():
            return PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"))
        return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    except (ValueError, KeyError, OSError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"{model_dir}: cannot load the tokenizer ({first})") from None


def eos_token_ids(model_dir: Path, config: Any) -> frozenset[int]:
    """End-of-sequence ids: generation_config.json's, else the config's (an int or a list)."""
    from transformers import GenerationConfig

    raw: Any = None
    if (model_dir / "generation_config.json").is_file():
        try:
            raw = GenerationConfig.from_pretrained(model_dir, local_files_only=True).eos_token_id
        except (ValueError, OSError):
            raw = None
    if raw is None:
        raw = getattr(config.get_text_config(), "eos_token_id", None)
        if raw is None:
            raw = getattr(config, "eos_token_id", None)
    if raw is None:
        return frozenset()
    return frozenset([raw] if isinstance(raw, int) else [int(x) for x in raw])
