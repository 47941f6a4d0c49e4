"""docs/deploy.md: its Kubernetes manifests, filled in as the doc says with
the digest references `micatool image --push` printed for real pushes to a
registry on 127.0.0.1, parse and name those digests."""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess

import pytest
import yaml

from docker_env import skopeo  # noqa: F401 (fixture)
from glibc_base import glibc_base  # noqa: F401 (fixture)
from helpers import EXAMPLES
from micatool.cli import main
from registry_env import open_registry  # noqa: F401 (fixture)

pytestmark = pytest.mark.registry
DOC = EXAMPLES.parent / "docs" / "deploy.md"
PUSHED = re.compile(r"^pushed [^ ]*: ([^ ]*) \(.*$", re.M)  # the doc's sed expression, in Python


@pytest.fixture(scope="module")
def references(open_registry, glibc_base, tmp_path_factory):
    refs = {}
    host = open_registry.host
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DOCKER_CONFIG", str(tmp_path_factory.mktemp("no-login")))
        for key, args in {
            "GPT_IMAGE": [str(EXAMPLES / "gpt" / "gpt.mica"), "--platform", "linux/amd64", "--tag", "gpt:1",
                          "--push", f"{host}/ml/gpt:1"],
            "GPU_GPT_IMAGE": [str(EXAMPLES / "gpu" / "gpt.mica"), "--tag", "gpu-gpt:1", "--base",
                              str(glibc_base.layout), "--push", f"{host}/ml/gpu-gpt:1"],
        }.items():
            out = tmp_path_factory.mktemp("push") / "out.txt"
            with open(out, "w") as f, contextlib.redirect_stdout(f):  # a module fixture has no capsys
                assert main(["-q", "image", *args]) == 0
            (refs[key],) = PUSHED.findall(out.read_text())
    return refs


def filled(references) -> list[dict]:
    documents = []
    for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S):
        for placeholder, ref in references.items():
            block = re.sub(rf"\b{placeholder}\b", ref, block)
        documents += list(yaml.safe_load_all(block))
    return documents


def test_the_references_are_digests(references, open_registry, skopeo):
    assert references["GPT_IMAGE"].startswith(f"{open_registry.host}/ml/gpt@sha256:")
    assert references["GPU_GPT_IMAGE"].startswith(f"{open_registry.host}/ml/gpu-gpt@sha256:")
    for ref in references.values():  # the registry serves, under each digest, the bytes of that digest
        raw = subprocess.run([skopeo, "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"],
                             capture_output=True, check=True).stdout
        assert "sha256:" + hashlib.sha256(raw).hexdigest() == ref.split("@")[1]


def volume_of(spec: dict, container: dict, flag: str) -> dict:
    """The pod volume that holds the path given after `flag` in the container's arguments."""
    path = container["args"][container["args"].index(flag) + 1]
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return volume


def test_the_job_trains_with_its_checkpoint_on_a_volume(references):
    (job,) = [d for d in filled(references) if d["kind"] == "Job"]
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["image"] == references["GPT_IMAGE"]
    (claim,) = [d for d in filled(references) if d["kind"] == "PersistentVolumeClaim"]
    assert volume_of(spec, container, "--save")["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert volume_of(spec, container, "--corpus")["configMap"]["name"] == "gpt-corpus"
    assert spec["restartPolicy"] == "Never"
    assert spec["securityContext"]["runAsUser"] == 65534


def test_the_deployment_asks_for_one_gpu(references):
    (deployment,) = [d for d in filled(references) if d["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["image"] == references["GPU_GPT_IMAGE"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert volume_of(spec, container, "--corpus")["configMap"]["name"] == "gpt-corpus"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels


def test_no_placeholder_is_left(references):
    for document in filled(references):
        assert "IMAGE" not in yaml.safe_dump(document).replace("imagePullSecret", "")
