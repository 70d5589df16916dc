"""Reading what Slurm reports, from JSON recorded on the test cluster (Slurm 22.05.8) and one squeue output of
Slurm 23.11: nodes, jobs, comments, the site file, and the clear refusals for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.adapters.slurm import Site, SlurmInputError
from optsched.adapters.slurm.apply import _hostnames
from optsched.adapters.slurm.comment import profile_from_comment, with_caps
from optsched.adapters.slurm.reader import build_import
from optsched.adapters.slurm.snapshot import Snapshot, parse_jobs, parse_nodes

DATA = Path(__file__).parent / "data"
NOW = 1796225600.0  # the recording's clock


def recorded(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def queue() -> dict:
    """The recorded queue with job 1 held again (it was recorded after it ran on n1; job 2 waits for it)."""
    doc = recorded("squeue-22.05.json")
    assert doc["jobs"][0]["job_state"] == "COMPLETED"
    doc["jobs"][0].update(job_state="PENDING", state_reason="JobHeldUser", nodes="", priority=0)
    return doc


def test_nodes_down_drained_and_odd_are_unavailable_with_their_names():
    doc = recorded("sinfo-drain-down.json")
    doc["nodes"][3]["state"] = "quantum"
    nodes = {n.name: n for n in parse_nodes(doc)}
    assert (nodes["n1"].gpu_type, nodes["n1"].gpus, nodes["n1"].available) == ("h100", 4, True)
    assert nodes["n2"].problem == "node n2 is idle+DRAIN (test)"
    assert nodes["n3"].problem == "node n3 is down (test)"
    assert nodes["n4"].problem == "node n4: unknown state 'quantum'; optsched plans nothing on it"


def test_jobs_read_gpus_dependencies_deadline_and_hold():
    jobs = {j.id: j for j in parse_jobs(queue())}
    assert jobs["1"].held and jobs["1"].gpus == 2 and jobs["1"].gpu_type is None and jobs["1"].deadline > 0
    assert (jobs["2"].gpu_type, jobs["2"].gpus, jobs["2"].after, jobs["2"].other_dependency) == ("l4", 1, ("1",), "")


def test_squeue_of_another_slurm_version_is_refused_naming_version_and_job():
    with pytest.raises(SlurmInputError) as caught:
        parse_jobs(recorded("squeue-23.11.json"))
    message = str(caught.value)
    assert "job 1: output of Slurm 23.11.4" in message and "job_state" in message and "22.05" in message


def test_unknown_gres_type_names_the_node_and_nothing_is_imported():
    doc = recorded("sinfo-drain-down.json")
    doc["nodes"][0]["gres"] = "gpu:mi300x:8"
    snapshot = Snapshot(parse_nodes(doc), parse_jobs(queue()))
    with pytest.raises(SlurmInputError, match="node n1: GRES type 'mi300x'"):
        build_import(Site(), snapshot, night_start=None, name="t", now=NOW)
    mapped = build_import(Site(types={"mi300x": "H100-SXM"}), snapshot, night_start=None, name="t", now=NOW)
    assert [(d.id, d.model) for d in mapped.workload.devices] == [("n1", "H100-SXM"), ("n4", "L4")]


def test_import_lists_each_left_out_job_and_node_with_its_reason():
    snapshot = Snapshot(parse_nodes(recorded("sinfo-drain-down.json")), parse_jobs(queue()))
    result = build_import(Site(priorities={"gpu": "high"}), snapshot, night_start=None, name="t", now=NOW)
    assert [j.id for j in result.workload.jobs] == ["1"]
    job = result.workload.jobs[0]
    assert (job.work_hours, job.parallel_fraction, job.max_devices, job.priority.value) == (3.0, 0.95, 2, "high")
    assert job.deadline_hours == pytest.approx((1796232791 - NOW) / 3600)
    assert [s.id for s in result.skipped] == ["2"] and "has no profile" in result.skipped[0].reason
    assert {s.id for s in result.unavailable} == {"n2", "n3"}


def test_comment_profiles_caps_and_their_errors():
    profile = profile_from_comment("mine optsched:work_hours=3,parallel_fraction=0.9,max_devices=2,priority=high")
    assert profile is not None and (profile.work_hours, profile.max_devices, profile.priority) == (3.0, 2, "high")
    assert profile_from_comment("just a note") is None
    with pytest.raises(ValueError, match=r"unknown comment key\(s\) \['speed'\]"):
        profile_from_comment("optsched:work_hours=3,parallel_fraction=0.9,speed=2")
    with pytest.raises(ValueError, match="work_hours='three' is not a number"):
        profile_from_comment("optsched:work_hours=three,parallel_fraction=0.9")
    with pytest.raises(ValueError, match="parallel_fraction"):
        profile_from_comment("optsched:work_hours=3,parallel_fraction=1.5")
    capped = with_caps("mine optsched:work_hours=3,parallel_fraction=0.9,powercap=100", {"n1": 300.4})
    assert capped == "mine optsched:work_hours=3,parallel_fraction=0.9,powercap=300"
    assert with_caps(capped, {"n1": 300, "n2": 250}).endswith("powercap=n1@300/n2@250")


def test_site_file_maps_types_domains_and_profiles():
    site = Site.load(
        {
            "types": {"MI300X": "H100-SXM"},
            "domains": [{"id": "r1", "nodes": ["n1", "n2"], "budget_w": 900}],
            "profiles": [{"pattern": "train-*", "work_hours": 2, "parallel_fraction": 0.9}],
        }
    )
    assert (site.model_of("h100"), site.model_of("mi300x"), site.model_of("x")) == ("H100-SXM", "H100-SXM", None)
    assert site.domain_of("n2") == "r1" and site.domain_of("n9") is None
    matched = site.profile_for("train-7")
    assert matched is not None and matched.work_hours == 2 and site.profile_for("eval") is None
    with pytest.raises(ValueError, match="node 'n1' is in domains 'a' and 'b'"):
        Site.load({"domains": [{"id": "a", "nodes": ["n1"]}, {"id": "b", "nodes": ["n1"]}]})


def test_node_lists_expand_as_slurm_prints_them():
    assert _hostnames("n[1-2,4],gpu07") == {"n1", "n2", "n4", "gpu07"}
    assert _hostnames("") == set()


def test_an_untyped_gres_takes_the_type_of_a_mapped_feature_or_names_the_node():
    doc = recorded("sinfo-drain-down.json")
    doc["nodes"][0]["gres"] = "gpu:4"  # n1: untyped, feature h100
    snapshot = Snapshot(parse_nodes(doc), parse_jobs(queue()))
    result = build_import(Site(), snapshot, night_start=None, name="t", now=NOW)
    assert [(d.id, d.model) for d in result.workload.devices] == [("n1", "H100-SXM"), ("n4", "L4")]
    doc["nodes"][0]["features"] = doc["nodes"][0]["active_features"] = "fast"
    with pytest.raises(SlurmInputError, match=r"node n1: its GRES names no GPU type and none of its features \(fast\)"):
        build_import(Site(), Snapshot(parse_nodes(doc), snapshot.jobs), night_start=None, name="t", now=NOW)


def test_no_node_to_plan_on_is_one_clear_refusal_naming_each_node():
    doc = recorded("sinfo-drain-down.json")
    for node in doc["nodes"]:
        node["state"] = "down"
    with pytest.raises(SlurmInputError, match="no node can take jobs now") as caught:
        build_import(Site(), Snapshot(parse_nodes(doc), ()), night_start=None, name="t", now=NOW)
    assert all(f"node n{i} is down" in str(caught.value) for i in range(1, 5))


def test_accounts_map_to_teams_through_the_site_file_or_by_their_own_name():
    doc = queue()
    doc["jobs"][0]["account"] = "vision-lab"
    snapshot = Snapshot(parse_nodes(recorded("sinfo-drain-down.json")), parse_jobs(doc))
    assert snapshot.job("1") is not None and snapshot.job("1").account == "vision-lab"
    own = build_import(Site(), snapshot, night_start=None, name="t", now=NOW)
    assert [j.team for j in own.workload.jobs] == ["vision-lab"]
    mapped = build_import(Site(teams={"vision-lab": "vision"}), snapshot, night_start=None, name="t", now=NOW)
    assert [j.team for j in mapped.workload.jobs] == ["vision"]
    doc["jobs"][0]["account"] = ""
    none = build_import(Site(), Snapshot(snapshot.nodes, parse_jobs(doc)), night_start=None, name="t", now=NOW)
    assert [j.team for j in none.workload.jobs] == [None]
