from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from biovqa.errors import AuditError
from biovqa.bench.audit import audit_bench
from biovqa.bench.folder import open_bench, write_bench


def test_fresh_build_passes(demo_bench: Path) -> None:
    assert "712 items" in audit_bench(demo_bench)


def test_changed_image_fails_with_its_name(bench_copy: Path) -> None:
    bench = open_bench(bench_copy)
    image = bench.items.column("image")[0].as_py()
    path = bench.resolve_image(image)
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    assert any(image in v and "sha256" in v for v in info.value.violations)


def test_missing_image_fails(bench_copy: Path) -> None:
    bench = open_bench(bench_copy)
    image = bench.items.column("image")[0].as_py()
    bench.resolve_image(image).unlink()
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    assert any(image in v and "missing" in v for v in info.value.violations)


def _rewrite(bench_copy: Path, table: pa.Table) -> None:
    manifest = open_bench(bench_copy).manifest
    write_bench(bench_copy, table, component="c1", generator=manifest["generator"], seed=manifest["seed"],
                sources={}, parameters=manifest["parameters"],
                extra={k: manifest[k] for k in ("images_root", "taxonomy_index", "images")})


def test_null_rank_and_duplicate_ids_fail(bench_copy: Path) -> None:
    table = open_bench(bench_copy).items
    family = table.column("family").to_pylist()
    family[3] = None
    table = table.set_column(table.column_names.index("family"), "family", pa.array(family, pa.string()))
    ids = table.column("item_id").to_pylist()
    ids[5] = ids[4]
    table = table.set_column(0, "item_id", pa.array(ids, pa.string()))
    _rewrite(bench_copy, table)
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    text = "\n".join(info.value.violations)
    assert "required rank 'family'" in text and "item_id not unique" in text


def test_counts_must_equal_manifest(bench_copy: Path) -> None:
    import json

    manifest_path = bench_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["counts"]["total"] += 1
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    assert any("counts.total" in v for v in info.value.violations)


def test_manifest_counts_follow_the_declaration_and_audit_rechecks_what_was_counted(bench_copy: Path) -> None:
    """The manifest counts the columns the component declares (``manifest_counts``: C1's task, group
    and tier), and audit recounts exactly the columns a manifest names, so a manifest that counted
    fewer (or other) columns still verifies, and a wrong count in any of them is named."""
    import json

    from biovqa.components.registry import get_component

    manifest_path = bench_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    declared = get_component("c1").manifest_counts
    assert declared == ("task", "group", "tier")
    assert sorted(manifest["counts"]) == sorted(["total", *(f"by_{column}" for column in declared)])
    del manifest["counts"]["by_group"], manifest["counts"]["by_tier"]
    manifest_path.write_text(json.dumps(manifest))
    audit_bench(bench_copy)  # only what the manifest counted is recounted
    manifest["counts"]["by_family"] = {"Nowhere": 1}
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    assert any(v.startswith("counts.by_family: manifest says {'Nowhere': 1}") for v in info.value.violations)
