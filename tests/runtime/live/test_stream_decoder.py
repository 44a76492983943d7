"""Streamed text joins to the decoded whole, also when a character's bytes span several tokens
(a byte-level BPE with no merges: every UTF-8 byte is one token, so 東 is three)."""

from __future__ import annotations

import pytest

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

from hkv.cli.render_run import RunProgress  # noqa: E402
from hkv.runtime.live.live_run import Generation  # noqa: E402
from hkv.runtime.live.stream_decoder import StreamDecoder  # noqa: E402

TEXTS = ["Tokyo 東京", "a🙂b", "東", "plain ascii words", "é and ü"]


@pytest.fixture(scope="module")
def byte_tokenizer():
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok)


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_join_to_the_text(byte_tokenizer, text):
    ids = byte_tokenizer(text)["input_ids"]
    assert len(ids) == len(text.encode("utf-8"))  # one token per byte: multi-byte characters are split
    decoder = StreamDecoder(lambda t: byte_tokenizer.decode(list(t)))
    pieces = [decoder.push(ids[:n]) for n in range(1, len(ids) + 1)] + [decoder.finish(ids)]
    assert "".join(pieces) == text
    assert not any("\ufffd" in p for p in pieces)
    # 東 is emitted whole, by the token that completes it
    if "東" in text:
        assert "東" in pieces


def test_a_cut_character_is_flushed_at_the_end(byte_tokenizer):
    ids = byte_tokenizer("a東")["input_ids"][:-1]  # the last byte of 東 never comes
    decoder = StreamDecoder(lambda t: byte_tokenizer.decode(list(t)))
    pieces = [decoder.push(ids[:n]) for n in range(1, len(ids) + 1)]
    assert "".join(pieces) == "a"
    whole = byte_tokenizer.decode(ids)  # "a" + the two bytes' replacement text
    assert decoder.finish(ids) == whole[1:] and decoder.text == whole


@pytest.mark.parametrize("text", TEXTS)
def test_human_stream_equals_the_json_text(byte_tokenizer, text, capsys):
    ids = byte_tokenizer(text)["input_ids"]
    progress = RunProgress(byte_tokenizer, 1, show=False, stream=True)
    generation = Generation("0", (1,))
    for token in ids:
        generation.output_token_ids.append(token)
        progress.on_token(generation, token)
    generation.finish_reason = "length"
    progress.on_finish(generation)
    out = capsys.readouterr().out
    assert out == f"{text}\n[length, {len(ids)} tokens]\n\n"
