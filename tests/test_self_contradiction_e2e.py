"""evaluation.self_contradiction end to end with the real local language model (Gemma 3 270M, the generate
extra): once through a real OpenAI-compatible HTTP server on 127.0.0.1 (models/generate/server.py, started and
stopped here) and once in process. The scorer is a tiny release of real checkpoint kinds with random weights
(tests/self_contradiction_helpers.py), so the tests check the loop, its files and its guarantees, not figures."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from parser_helpers import compose_cfg
from self_contradiction_helpers import tiny_release

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-SECRET-9876"
SMALL = ["generator.max_new_tokens=32", "trigger.sampling.max_new_tokens=8", "revise.sampling.max_new_tokens=12",
         "revise.rounds=2"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return tiny_release(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def lm_server():
    """`python -m models.generate.server` serving gemma3_270m on a free port; stopped after the module."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "models.generate.server", "--model", "gemma3_270m", "--port",
                             str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300  # the first call converts the GGUF (50-90 s); later ones load in seconds
    try:
        while True:
            assert proc.poll() is None, f"the server died: {proc.stderr.read()[-2000:]}"
            try:
                if requests.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.time() < deadline, "the server did not start"
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/v1/models", timeout=2)


def _cli(args, run_dir):
    return subprocess.run([sys.executable, "-m", "evaluation.self_contradiction", *args, f"hydra.run.dir={run_dir}"],
                          cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600)


def _check_outputs(d: Path, n_texts: int) -> dict:
    from data_prep.chatprotect import read_pairs

    for name in ("generations.jsonl", "pairs.jsonl", "revised.jsonl", "metrics.json", "report.html"):
        assert (d / name).is_file(), name
    m = json.loads((d / "metrics.json").read_text())
    for key in ("self_contradiction_rate", "mitigation_removed", "informativeness_kept"):
        assert m[key] is None or 0.0 <= m[key] <= 1.0, (key, m[key])
    assert m["texts"] == n_texts and m["sentences"] > 0 and isinstance(m["alternatives_refused"], dict)
    revised = [json.loads(x) for x in (d / "revised.jsonl").read_text().splitlines()]
    assert len(revised) == n_texts and all({"id", "text", "revised"} <= set(r) for r in revised)
    for r in revised:  # a sentence without a detected conflict is never changed
        changed = {c["sentence"] for c in r["changes"]}
        assert all(c["pairs"] for c in r["changes"]) and len(changed) <= r["self_contradictory"]
    if (d / "pairs.jsonl").read_text().strip():
        pairs = read_pairs(d / "pairs.jsonl")  # the shared ChatProtect format reads back
        assert all(p["label"] is None for p in pairs)
    return m


def test_the_whole_loop_through_an_http_server(lm_server, release, tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("Alexander the Great\n")
    args = ["generator=openai", f"generator.base_url={lm_server}", "generator.model=gemma3_270m",
            f"generator.api_key={SECRET}", f"generator.cache_dir={tmp_path / 'cache'}", f"topics={topics}",
            f"release={release}", "mitigation=revise", *SMALL]
    out = _cli(args, tmp_path / "D")
    assert out.returncode == 0, out.stderr[-3000:]
    m = _check_outputs(tmp_path / "D", 1)
    gens = [json.loads(x) for x in (tmp_path / "D" / "generations.jsonl").read_text().splitlines()]
    texts = [g for g in gens if g["kind"] == "text"]
    assert [g["status"] for g in texts] == ["ok"] and all(g["text"] for g in texts)
    assert any(g["kind"] == "trigger" for g in gens) and m["alternatives"]["requested"] > 0
    assert m["perplexity_original"] and m["perplexity_original"] > 1  # the server's echo log-probabilities
    assert m["generator"].startswith("openai:gemma3_270m@http://127.0.0.1")
    took = json.loads((tmp_path / "D" / "run.json").read_text())  # what the run took: not in metrics.json
    assert set(took["steps"]) >= {"generate", "parse", "trigger", "detect", "mitigate"} and "steps" not in m
    assert took["generator_usage"]["requests"] > 0 and took["wall_seconds"] > 0
    # the key given on the command line never reaches a file the run wrote (log, .hydra/, report, metrics)
    said = out.stdout + out.stderr
    files = [p for p in (tmp_path / "D").rglob("*") if p.is_file()]
    assert SECRET not in said and not [p for p in files if SECRET in p.read_text(errors="replace")]
    assert "***" in (tmp_path / "D" / ".hydra" / "overrides.yaml").read_text()
    # a rerun costs nothing: every answer comes from the cache
    again = _cli(args, tmp_path / "D2")
    assert again.returncode == 0, again.stderr[-3000:]
    took2 = json.loads((tmp_path / "D2" / "run.json").read_text())
    assert took2["cache"]["misses"] == 0 and took2["cache"]["hits"] > 0
    assert (tmp_path / "D2" / "revised.jsonl").read_text() == (tmp_path / "D" / "revised.jsonl").read_text()


def test_a_judge_reads_p_yes_from_the_servers_logprobs(lm_server):
    """P("Yes") / (P("Yes") + P("No")) from the first answer token's top logprobs, through the legacy completions API."""
    from models.generate import OpenAIGenerator

    gen = OpenAIGenerator(lm_server, "gemma3_270m", chat=False)
    prompt = "Question: Is Paris the capital of France? Answer Yes or No.\nAnswer:"
    p = gen.yes_probability([prompt])[0]
    assert p is not None and 0.0 < p < 1.0


def test_the_same_loop_in_process_escapes_the_page(release, tmp_path):
    from evaluation.self_contradiction import run

    texts = tmp_path / "texts.jsonl"
    rows = [{"id": "ada<b>", "prompt": "Please tell me about <script>alert(1)</script>",
             "text": "Ada Lovelace was born in London in 1815. She was born in Paris in 1816 <script>alert(2)</script>. "
                     "She spent her youth in Surrey."},
            {"id": "empty", "prompt": "Please tell me about nothing", "text": ""}]
    texts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = compose_cfg("eval_self_contradiction", ["generator=gemma3_270m", f"generator.cache_dir={tmp_path / 'cache'}",
                                                  f"texts={texts}", f"release={release}", "mitigation=delete", *SMALL])
    m = run(cfg, tmp_path / "D")
    _check_outputs(tmp_path / "D", 2)
    assert m["sentences"] == 3 and m["generator"] == "local:gemma3_270m" and "weak base model" in m["note"]
    page = (tmp_path / "D" / "report.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page and 'data-id="ada&lt;b&gt;"' in page


def test_bad_input_stops_before_any_model_loads(tmp_path):
    bad = tmp_path / "texts.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": 1, "text": 5}\n')
    out = _cli([f"texts={bad}", "release=/nonexistent"], tmp_path / "D")
    said = out.stdout + out.stderr
    assert out.returncode == 1 and f"{bad}:2: expected an object" in said and "Traceback" not in said
    out = _cli([f"texts={tmp_path / 'missing.jsonl'}"], tmp_path / "D2")
    assert out.returncode == 1 and "file not found" in out.stdout + out.stderr
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"id": "a", "text": "fine"}\n')
    out = _cli([f"texts={ok}", "mitigation=revise"], tmp_path / "D3")
    assert out.returncode == 1 and "needs a generator" in out.stdout + out.stderr


def test_the_loop_with_a_chat_model_uses_chatprotects_prompts(release, tmp_path):
    """SmolLM2-135M-Instruct in process (its wheel built once: scripts/setup.sh), asked with
    conf/chat_prompts/chatprotect.yaml. Threshold 0 flags every scored pair, so each one is revised and, still
    flagged after its round, dropped: counted as a deletion, none as a revision."""
    from evaluation.self_contradiction import run

    topics = tmp_path / "topics.txt"
    topics.write_text("Ada Lovelace\n")
    cfg = compose_cfg("eval_self_contradiction", [
        "generator=smollm2_135m_instruct", f"generator.cache_dir={tmp_path / 'cache'}", "generator.max_new_tokens=40",
        f"topics={topics}", f"release={release}", "mitigation=revise", "threshold=0.0", "revise.rounds=1",
        "trigger.sampling.max_new_tokens=24", "revise.sampling.max_new_tokens=24"])
    m = run(cfg, tmp_path / "D")
    _check_outputs(tmp_path / "D", 1)
    assert m["generator"] == "local:smollm2_135m_instruct" and m["generator_is_chat"] is True
    gens = [json.loads(x) for x in (tmp_path / "D" / "generations.jsonl").read_text().splitlines()]
    triggers = [g for g in gens if g["kind"] == "trigger"]
    assert triggers, "no sentence had a QA to withhold"
    first = triggers[0]["request"]  # system, three demonstrations (user, assistant), then the request
    assert [x["role"] for x in first] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "Subject;Predicate;Object triple" in first[-1]["content"] and "Ada Lovelace" in first[-1]["content"]
    assert m["generator_usage"]["new_tokens"] > 0 and m["generator_usage"]["tokens_per_second"] > 0
    if m["self_contradictory_sentences"]:
        revise = [g for g in gens if g["kind"] == "revise"]
        assert len(revise) == m["revisions_asked"] > 0 and "Remove the conflicting information" in revise[0]["request"][0]["content"]
        assert m["removed_by_revision"] == 0.0 and m["removed_by_deletion"] == m["mitigation_removed"] == 1.0
        assert m["sentences_dropped"] == m["self_contradictory_sentences"]


def test_a_chat_model_without_a_chat_template_is_refused_by_name(tmp_path):
    import shutil

    from models.generate.local import LocalGenerator
    from models.model_paths import resolve_model_path

    folder = tmp_path / "no-template"
    shutil.copytree(resolve_model_path("smollm2_135m_instruct"), folder)
    (folder / "chat_template.jinja").unlink()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=f"{folder}: chat=true but its tokenizer has no chat template.*gen_sentence or revise"):
        LocalGenerator(str(folder), chat=True)


@pytest.mark.slow  # about 90 s on one loaded core
def test_the_judge_decides_from_p_yes_after_its_explanation(release, tmp_path):
    """detect=judge with SmolLM2-135M: every scored pair gets the chat model's explanation and P("Yes") as its
    probability, the trained scorer's beside it (p_scorer)."""
    from evaluation.self_contradiction import run

    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"id": "ada", "prompt": "Please tell me about Ada Lovelace",
                                 "text": "Ada Lovelace was born in London in 1815. She was born in Paris in 1816."}) + "\n")
    cfg = compose_cfg("eval_self_contradiction", [
        "generator=smollm2_135m_instruct", f"generator.cache_dir={tmp_path / 'cache'}", f"texts={texts}",
        f"release={release}", "mitigation=none", "detect=judge", "judge.explain.max_new_tokens=16", "perplexity=false"])
    run(cfg, tmp_path / "D")
    pairs = [json.loads(x) for x in (tmp_path / "D" / "pairs.jsonl").read_text().splitlines()]
    scored = [p for p in pairs if p["p_contradiction"] is not None]
    assert scored and all(0.0 <= p["p_contradiction"] <= 1.0 for p in scored)
    assert all(p["decision"] == (p["p_contradiction"] >= 0.5) for p in scored)
    assert all("p_scorer" in p and p["explanation"] for p in scored)


def test_fact_revise_with_a_chat_reviser_and_no_generator(release, tmp_path):
    """revise.strategy=fact with SmolLM2-135M-Instruct as the reviser of given texts (generator=none): threshold 0
    flags every scored pair; each request holds the demonstrations, the conflicting answers and the draft, and every
    candidate ends accepted or refused with a reason."""
    from evaluation.self_contradiction import run

    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"id": "t1", "prompt": "Please tell me about Merkel",
                                 "text": "Merkel joined the CDU in 1990. Merkel joined the CDU in 1985."}) + "\n")
    cfg = compose_cfg("eval_self_contradiction", [
        "generator=none", "generator@reviser=smollm2_135m_instruct", f"reviser.cache_dir={tmp_path / 'cache'}",
        f"texts={texts}", f"release={release}", "mitigation=revise", "threshold=0.0", "revise.strategy=fact",
        "revise.rounds=1", "revise.candidates=2", "revise.sampling.max_new_tokens=24", "revise.perplexity_context=prefix"])
    m = run(cfg, tmp_path / "D")
    _check_outputs(tmp_path / "D", 1)
    assert m["generator"] is None and m["reviser"] == "local:smollm2_135m_instruct" and m["revise_strategy"] == "fact"
    gens = [json.loads(x) for x in (tmp_path / "D" / "generations.jsonl").read_text().splitlines()]
    revise = [g for g in gens if g["kind"] == "revise"]
    assert m["self_contradictory_sentences"] == 1  # the second sentence, judged against the first
    assert 0 < len(revise) == m["revisions_asked"] <= 2
    ask = revise[0]["request"]
    assert [x["role"] for x in ask] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "Draft with it removed:" in ask[-1]["content"]
    assert all(r["refused"] for r in revise[:-1])  # a candidate after the first only when the one before was refused
    assert m["removed_by_revision"] + m["removed_by_deletion"] == pytest.approx(m["mitigation_removed"])
    assert m["perplexity_changed_sentences"] is not None and m["reviser_usage"]["new_tokens"] > 0
    # perplexity_context=prefix: a candidate that reached the checks was measured after the prompt and first sentence
    checked = [r for r in revise if r["refused"] in ("lost_qas", "perplexity", "still_conflicts")]
    assert all(r["perplexity"] and r["perplexity_original"] for r in checked)
    assert m["perplexity_changed_sentences"]["context"] == "prefix"
