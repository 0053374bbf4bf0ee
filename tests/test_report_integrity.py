"""The report shows only what the run computed, as visible text, written only where it
belongs (issue 21): digests verified at render time, a hand-edited checks file withheld, NUL,
ESC and bidi overrides printed visibly, one unreadable checks file a note on its artifact, and
a planted temporary-file symlink never followed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lbrepro.core.claims import Claim, make_claim, write_checks
from lbrepro.core.io import atomic_write_text, write_table
from lbrepro.core.manifest import write_digest
from lbrepro.core.verdicts import REPRODUCED, exact
from lbrepro.report.manifest import CHANGED, UNRECORDED, VERIFIED, file_status
from lbrepro.report.render import build_context
from lbrepro.report.sanitize import MAX_DEPTH, read_json_bounded, visible
from test_report import FakeTree, fake_artifact

HOSTILE = "ok\x00\x1b[2J\u202edecudorper\u2066x\u2069\x9b"


def _tree(root: Path, claims: list[Claim]) -> FakeTree:
    art = fake_artifact("toy-x", plot=None)
    paths = {k: root / v for k, v in art.paths().items()}
    row = {"artifact": "toy-x", "method": "cf", "quantity": "u", "value": 1}
    write_table([row], paths["table"])
    write_digest(paths["table"], rows=1)
    write_checks(claims, paths["checks"])
    write_digest(paths["checks"])
    from lbrepro.artifacts.registry import Paper

    papers = {"toy": Paper("toy", "Toy", "A", "A, 2024.", "Toys.")}
    return FakeTree(root, {"seed": 1, "simulation": {}, "toy-x": {"a": 1}}, [art], papers)


def _claims(n: int, passed: bool = True) -> list[Claim]:
    return [
        make_claim(
            f"claim {i}",
            exact(passed, 1.0, "1"),
            control=("a near miss", exact(False, 1.1, "1")),
            distance="0.1 from the claim",
        )
        for i in range(n)
    ]


def _context(tree: FakeTree) -> dict:
    return build_context(
        tree.config,
        root=tree.root,
        out=tree.root / "report" / "index.html",
        bench_dir=tree.root / "benchmarks",
        artifacts=tree.artifacts,
        papers=tree.papers,
    )


def test_files_are_verified_and_listed_in_provenance(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(2))
    context = _context(tree)
    assert [f["status"] for f in context["manifest"]["files"]] == [VERIFIED, VERIFIED]
    html = tree.render().read_text()
    assert "Manifest: 2 files verified" in html
    assert context["manifest"]["files"][0]["sha256"] in html


def test_hand_edited_checks_are_withheld(tmp_path: Path) -> None:
    """7 → 9 reproduced and an invented claim: shown as changed, not as results."""
    tree = _tree(tmp_path, _claims(7) + _claims(2, passed=False))
    checks = tmp_path / tree.artifacts[0].paths()["checks"]
    data = json.loads(checks.read_text())
    for entry in data:
        entry["passed"] = True
    data.append({"claim": "invented", "expected": 1, "measured": 1, "passed": True})
    checks.write_text(json.dumps(data))
    assert file_status(checks)[0] == CHANGED
    context = _context(tree)
    assert context["counts"]["paper"]["verdicts"] == 0 and not context["claims"]
    html = tree.render().read_text()
    assert "invented" not in html and CHANGED in html


def test_unrecorded_file_is_shown_and_listed(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(1))
    checks = tmp_path / tree.artifacts[0].paths()["checks"]
    Path(str(checks) + ".digest.json").unlink()
    context = _context(tree)
    assert context["counts"]["paper"]["verdicts"] == 1
    assert UNRECORDED in [f["status"] for f in context["manifest"]["files"]]


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\u202e", "\u2066", "\x9b", "\u200b", "\x7f"])
def test_control_and_bidi_characters_are_written_visibly(tmp_path: Path, char: str) -> None:
    tree = _tree(tmp_path, [Claim(f"a{char}b", REPRODUCED, 1.0, 1.0, 0.1, details=HOSTILE)])
    html = tree.render().read_text()
    assert char not in html
    assert visible(char) in html and visible(char) != char


def test_ordinary_text_is_untouched() -> None:
    text = "ρ → 0.9, E[T] ≤ 2⁵ — café\ttab\nline"
    assert visible(text) == text


def test_deeply_nested_checks_file_is_a_note_on_its_artifact(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(1))
    checks = tmp_path / tree.artifacts[0].paths()["checks"]
    for depth in (MAX_DEPTH + 1, 5000, 100_000):
        checks.write_text("[" * depth + "]" * depth)
        write_digest(checks)
        html = tree.render().read_text()
        assert "claim checks unreadable" in html and "nested more than" in html
    with pytest.raises(ValueError, match="nested"):
        read_json_bounded(checks)


def test_planted_temporary_symlink_is_not_followed(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(1))
    outside = tmp_path / "outside.html"
    outside.write_text("untouched")
    (tmp_path / "report").mkdir(exist_ok=True)
    os.symlink(outside, tmp_path / "report" / ".index.html.tmp")
    out = tree.render()
    assert outside.read_text() == "untouched"
    assert out.is_file() and not out.is_symlink() and "claim 0" in out.read_text()


def test_atomic_write_leaves_no_temporary_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    atomic_write_text(target, "one")
    with pytest.raises(TypeError):
        atomic_write_text(target, 5)  # type: ignore[arg-type]
    assert target.read_text() == "one" and sorted(os.listdir(tmp_path)) == ["f.txt"]


def test_a_changed_figure_is_not_shown(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(1))
    art = fake_artifact("toy-x")
    tree.artifacts = [art]
    for kind in ("png", "svg", "pdf"):
        path = tmp_path / art.paths()[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"drawn by the run")
        write_digest(path)
    view = _context(tree)["sections"][0]["artifacts"][0]
    assert view["figure"]["png"]["href"] is not None
    (tmp_path / art.paths()["png"]).write_bytes(b"drawn by hand")
    view = _context(tree)["sections"][0]["artifacts"][0]
    assert view["figure"]["png"]["href"] is None and CHANGED in view["figure_note"]
    assert CHANGED in tree.render().read_text()


def test_summary_of_a_changed_table_is_withheld(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _claims(1))
    art = fake_artifact("toy-x", plot=None, summary=lambda rows: [{"v": r["value"]} for r in rows])
    tree.artifacts = [art]
    assert _context(tree)["sections"][0]["artifacts"][0]["summary"] is not None
    table = tmp_path / art.paths()["table"]
    table.write_text(table.read_text().replace(",1,", ",7,"))
    view = _context(tree)["sections"][0]["artifacts"][0]
    assert view["summary"] is None and CHANGED in view["summary_note"]
