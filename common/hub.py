"""Publishing a checkpoint folder to the Hugging Face Hub, with a model card that carries the
eval results as model-index metadata. The endpoint comes from HF_ENDPOINT (tests point it at a
local server), the token from HF_TOKEN or the cached login, or `hub.token` (used for the push only;
masked wherever the config or the command line is written: common.secrets).

A failed push never touches the local folder: it is logged with the reason and returns None.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData

log = logging.getLogger(__name__)


def _eval_results(results: list[dict]) -> list[EvalResult]:
    """The model-index entries of `results` (the shape write_model_card takes)."""
    return [EvalResult(task_type=r["task_type"], dataset_type=r["dataset_type"], dataset_name=r["dataset_name"],
                       dataset_split=r.get("dataset_split"), metric_type=r["metric_type"],
                       metric_name=r.get("metric_name"), metric_value=round(float(r["value"]), 4)) for r in results]


def _results_table(results: list[dict]) -> str:
    """The same results as a markdown table, values in %."""
    rows = "\n".join(f"| {r['dataset_name']} | {r.get('dataset_split', '')} | {r.get('metric_name', r['metric_type'])} "
                     f"| {100 * float(r['value']):.1f} |" for r in results)
    return f"| dataset | split | metric | value (%) |\n|---|---|---|---|\n{rows}"


def write_model_card(folder: str | Path, *, model_name: str, description: str,
                     results: list[dict], datasets: list[str], command: str,
                     base_model: str | None = None, tags: list[str] | None = None) -> Path:
    """Write README.md (a model card) into `folder`.

    `results`: [{"task_type", "dataset_type", "dataset_name", "dataset_split", "metric_type",
    "metric_name", "value"}], values as reported (fractions in [0, 1]).
    """
    data = ModelCardData(language="en", license="mit", library_name="transformers",
                         datasets=datasets, tags=tags or [], base_model=base_model,
                         model_name=model_name, eval_results=_eval_results(results) or None)
    content = (
        f"---\n{data.to_yaml()}\n---\n\n# {model_name}\n\n{description}\n\n"
        f"## Evaluation\n\n{_results_table(results)}\n\n"
        f"## How it was trained\n\n```\n{command}\n```\n"
    )
    card = ModelCard(content)
    path = Path(folder) / "README.md"
    card.save(path)
    return path


def push_folder(folder: str | Path, repo_id: str, *, private: bool = True,
                commit_message: str = "Upload checkpoint", token: str | None = None) -> str | None:
    """Create the repo (if needed) and upload `folder`. Returns the commit URL, or None on failure
    (the reason is logged; the local folder stays as it was). `token`: None -> HF_TOKEN / the cached login."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"push: checkpoint folder {folder} does not exist")
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT"), token=token or None)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=commit_message)
    except Exception as e:  # network, auth, server errors: report and keep the local checkpoint
        log.error("Push of %s to %s failed (%s: %s); the local checkpoint is kept at %s",
                  folder, repo_id, type(e).__name__, e, folder)
        return None
    url = getattr(info, "commit_url", None) or str(info)
    log.info("Pushed %s to %s (%s)", folder, repo_id, url)
    return url


def add_results(repo_id: str, results: list[dict], files: dict[str, str], *, commit_message: str,
                token: str | None = None) -> str | None:
    """Add eval results (the `results` shape of write_model_card) to the model-index of a pushed
    checkpoint's card, and `files` ({path in repo: text}, e.g. the test metrics), in one commit.
    Returns the commit URL, or None on failure (logged; nothing local is touched)."""
    from huggingface_hub import CommitOperationAdd

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT"), token=token or None)
    try:
        card = ModelCard.load(repo_id, token=token or None)
        old = [r for r in (card.data.eval_results or [])
               if not any(r.dataset_split == n["dataset_split"] and r.dataset_name == n["dataset_name"]
                          and r.metric_type == n["metric_type"] for n in results)]
        card.data.eval_results = old + _eval_results(results)
        card.text += f"\n## {commit_message}\n\n{_results_table(results)}\n"
        ops = [CommitOperationAdd("README.md", str(card).encode())]
        ops += [CommitOperationAdd(path, text.encode()) for path, text in files.items()]
        info = api.create_commit(repo_id=repo_id, operations=ops, commit_message=commit_message)
    except Exception as e:  # network, auth, a repo without a card: report, keep the local results
        log.error("Adding results to %s failed (%s: %s); the local metrics are kept", repo_id, type(e).__name__, e)
        return None
    url = getattr(info, "commit_url", None) or str(info)
    log.info("Added %d results to %s (%s)", len(results), repo_id, url)
    return url
