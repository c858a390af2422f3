"""`tilegrad plan --svg`: the picture of a plan holds every buffer at its offset, the double-buffer
halves, the reserve, the core split and the shape bound."""

import xml.etree.ElementTree as ET

from tilegrad.cli import main

SVG = "{http://www.w3.org/2000/svg}"


def test_plan_svg_draws_cores_buffers_reserve_and_bound(tmp_path, capsys):
    path = tmp_path / "plan.svg"
    code = main(["plan", "embedding_dense_backward", "--target", "ascend910", "--shape", "grad=4096x256",
                 "indices=4096", "--attr", "num_weights=5000", "scale_grad_by_freq=true", "--svg", str(path),
                 "--json"])
    assert code == 0
    import json

    report = json.loads(capsys.readouterr().out)
    root = ET.parse(path).getroot()
    titles = [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert sum(t.startswith("core ") for t in titles) == 32 * len(report["stages"])  # one box per core per stage
    for buffer in report["buffers"]:
        drawn = [t for t in titles if t.startswith(f"{buffer['name']}: ") and f"at offset {buffer['offset']}" in t
                 and f"stage {buffer['stage']})" in t]
        assert len(drawn) == (len({b["stage"] for b in report["buffers"]} - {"all"})
                              if buffer["stage"] == "all" else 1) * buffer["slots"]
        if buffer["slots"] == 2:
            assert any("half 2 of 2" in t for t in drawn)
    assert any(t.startswith("reserve: 16384 B") for t in titles)
    assert f"shape bound: {report['bound']}" in texts and "20*E < 180192 - 8*counts_size" in report["bound"]


def test_plan_svg_on_cpu_says_there_is_no_staging(tmp_path, capsys):
    path = tmp_path / "cpu.svg"
    assert main(["plan", "binary_cross_entropy_grad", "--shape", "input_x=100000", "--svg", str(path)]) == 0
    texts = [t.text for t in ET.parse(path).getroot().iter(f"{SVG}text")]
    assert any("no UB staging on cpu" in t for t in texts)
