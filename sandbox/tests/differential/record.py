#!/usr/bin/env python3
"""Records kube-apiserver's answers to the differential scenarios as golden files.

Usage: record.py ORACLE_DIR [FAMILY...]   (a directory started by
../shared/tools/kube-oracle/run.sh; only the named families when given)

Every scenario runs in its own namespace `d-<scenario>`; each step's request is sent as
written (after substituting $NS, {{rv:N}}, {{uid:N}} from earlier answers) and the answer,
status and JSON body (watch: the list of events), is stored verbatim. The sandbox test
(`tests/differential.rs`) replays the same requests and compares after normalising volatile
fields. Scenarios live in scenarios.py; answers in golden/<family>.json.
"""
import base64
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios  # noqa: E402

USER_AGENT = "differential/1.0"


def load_env(directory):
    env = {}
    with open(os.path.join(directory, "env")) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                env[key] = value.strip("'\"")
    return env


class Server:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def send(self, method, path, body=None, content_type=None, accept=None, watch=False,
             token=None, headers=None):
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        token = self.token if token is None else token
        if token:
            request.add_header("Authorization", "Bearer " + token)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        request.add_header("User-Agent", USER_AGENT)
        request.add_header("Accept", accept or "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type or "application/json")
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=60) as answer:
                status, text = answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if watch:
            events = [json.loads(line) for line in text.splitlines() if line.strip()]
            return status, events
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text


def substitute(text, answers, namespace):
    text = text.replace("$NS", namespace)

    def value(match):
        what, index = match.group(1), int(match.group(2))
        body = answers[index]
        if what == "token":
            return token_of(body)
        meta = body.get("metadata", {}) if isinstance(body, dict) else {}
        field = {"rv": "resourceVersion", "uid": "uid", "continue": "continue"}[what]
        return urllib.parse.quote(str(meta.get(field, "")), safe="")

    return re.sub(r"\{\{(rv|uid|continue|token):(\d+)\}\}", value, text)


def token_of(body):
    """The token an answer carries: a TokenRequest's, or a token Secret's (decoded)."""
    token = (body.get("status") or {}).get("token")
    if token:
        return token
    data = (body.get("data") or {}).get("token")
    return base64.b64decode(data).decode() if data else ""


def has_pointer(value, pointer):
    for part in pointer.strip("/").split("/"):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return False
    return True


def run(server, scenario):
    namespace = "d-" + scenario["name"]
    server.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": namespace}})
    answers, recorded = [], []
    for step in scenario["steps"]:
        path = substitute(step["path"], answers, namespace)
        body = step.get("body")
        if body is not None:
            text = body if isinstance(body, str) else json.dumps(body)
            body = substitute(text, answers, namespace)
        token = step.get("as")
        if token is not None:
            token = substitute(token, answers, namespace)
        headers = {k: substitute(v, answers, namespace) for k, v in step.get("headers", {}).items()}
        deadline = time.time() + 30
        while True:
            status, answer = server.send(step["method"], path, body, step.get("contentType"),
                                         step.get("accept"), step.get("watch", False),
                                         token, headers)
            until, until_path = step.get("until"), step.get("untilPath")
            done = (until is None or status == until) and (
                until_path is None or has_pointer(answer, until_path))
            if done or time.time() > deadline:
                break
            time.sleep(0.2)
        if step.get("sleep"):
            time.sleep(step["sleep"])
        answers.append(answer if isinstance(answer, dict) else {})
        recorded.append({**step, "response": {"status": status, "body": answer}})
    server.send("DELETE", "/api/v1/namespaces/" + namespace)
    for cleanup in scenario.get("cleanup", []):
        server.send("DELETE", substitute(cleanup, answers, namespace))
    return {"name": scenario["name"], "steps": recorded}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    env = load_env(sys.argv[1])
    server = Server(env["KUBE_ORACLE_SERVER"], env["KUBE_ORACLE_TOKEN"])
    for step in scenarios.SETUP:
        server.send(step["method"], step["path"], step.get("body"))
    for step in scenarios.SETUP_WAIT:
        deadline = time.time() + 60
        while server.send(step["method"], step["path"])[0] != 200 and time.time() < deadline:
            time.sleep(0.5)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "golden", "setup.json"), "w") as f:
        json.dump({"setup": scenarios.SETUP, "wait": scenarios.SETUP_WAIT}, f, indent=1, sort_keys=True)
        f.write("\n")
    version = server.send("GET", "/version")[1]
    total = 0
    wanted = set(sys.argv[2:])
    for family, items in scenarios.families().items():
        if wanted and family not in wanted:
            continue
        results = []
        for scenario in items:
            results.append(run(server, scenario))
            total += 1
        path = os.path.join(here, "golden", family + ".json")
        with open(path, "w") as f:
            json.dump({"server": version.get("gitVersion"), "scenarios": results}, f,
                      indent=1, sort_keys=True)
            f.write("\n")
        print(f"{family}: {len(results)} scenarios -> {path}", flush=True)
    print(f"recorded {total} scenarios from {version.get('gitVersion')}")


if __name__ == "__main__":
    main()
