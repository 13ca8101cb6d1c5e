#!/usr/bin/env python3
"""A kubectl that plays a cluster on this machine, for the lab's Kubernetes tests.

It knows the four commands the lab runs for a probe: `apply -f -` of an Indexed Job (given as
JSON), which starts each pod's container command here with JOB_COMPLETION_INDEX set as the
Job's downward API would; `get job NAME -o json` (its status: pods succeeded and failed);
`logs -l job-name=NAME --prefix` (each line prefixed `[pod/POD/CONTAINER] `, as kubectl does); `delete job NAME`. The
container's `webscope` is the binary under test (FAKE_KUBECTL_WEBSCOPE); state lives in
FAKE_KUBECTL_STATE, and every command is appended to its `calls` file for the test to read.
"""

import json
import os
import subprocess
import sys

STATE = os.environ["FAKE_KUBECTL_STATE"]
EXE = os.environ["FAKE_KUBECTL_WEBSCOPE"]


def expand(arg, env):
    """A container argument as Kubernetes expands it: `$(NAME)` of a defined variable to its
    value, `$$` to `$`, anything else as written."""
    out, i = [], 0
    while i < len(arg):
        if arg.startswith("$$", i):
            out.append("$")
            i += 2
        elif arg.startswith("$(", i) and ")" in arg[i:]:
            end = arg.index(")", i)
            name = arg[i + 2 : end]
            out.append(env.get(name, arg[i : end + 1]))
            i = end + 1
        else:
            out.append(arg[i])
            i += 1
    return "".join(out)


def job_dir(name):
    return os.path.join(STATE, name)


def apply():
    job = json.load(sys.stdin)
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed", job
    name = job["metadata"]["name"]
    pods = job["spec"]["completions"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["webscope"], container
    d = job_dir(name)
    os.makedirs(d)
    for i in range(pods):
        args = [expand(a, {"JOB_COMPLETION_INDEX": str(i)}) for a in container["args"]]
        status = os.path.join(d, f"pod-{i}.status")
        with open(os.path.join(d, f"pod-{i}.log"), "w") as log:
            subprocess.Popen(
                ["sh", "-c", '"$@"; echo $? > "$STATUS"', "pod", EXE] + args,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, STATUS=status),
                start_new_session=True,
            )
    with open(os.path.join(d, "pods"), "w") as f:
        f.write(str(pods))
    print(f"job.batch/{name} created")


def pods_of(name):
    with open(os.path.join(job_dir(name), "pods")) as f:
        return int(f.read())


def get(args):
    name = args[2]
    d = job_dir(name)
    succeeded = failed = 0
    for i in range(pods_of(name)):
        path = os.path.join(d, f"pod-{i}.status")
        if os.path.exists(path):
            with open(path) as f:
                status = f.read().strip()
            if status == "0":
                succeeded += 1
            elif status != "":
                failed += 1
    status = {"active": pods_of(name) - succeeded - failed}
    if succeeded:
        status["succeeded"] = succeeded
    if failed:
        status["failed"] = failed
    print(json.dumps({"kind": "Job", "metadata": {"name": name}, "status": status}))
    return 0


def logs(args):
    selector = args[args.index("-l") + 1]
    name = selector.split("=", 1)[1]
    for i in range(pods_of(name)):
        with open(os.path.join(job_dir(name), f"pod-{i}.log")) as f:
            for line in f:
                sys.stdout.write(f"[pod/{name}-{i}-x7k2q/load] {line}")
    return 0


def delete(args):
    name = args[args.index("job") + 1]
    open(os.path.join(job_dir(name), "deleted"), "w").close()
    print(f'job.batch "{name}" deleted')
    return 0


def main():
    args = sys.argv[1:]
    with open(os.path.join(STATE, "calls"), "a") as f:
        f.write(" ".join(args) + "\n")
    if args[:3] == ["apply", "-f", "-"]:
        apply()
        return 0
    if args[:2] == ["get", "job"] and args[3:] == ["-o", "json"]:
        return get(args)
    if args[0] == "logs":
        return logs(args)
    if args[:2] == ["delete", "job"]:
        return delete(args)
    print(f"fake kubectl: unknown command {args}", file=sys.stderr)
    return 2


sys.exit(main())
