"""The differential scenarios: requests sent alike to kube-apiserver (record.py) and to the
sandbox (tests/differential.rs). Each scenario runs in namespace `d-<name>`, written `$NS`;
`{{rv:N}}`, `{{uid:N}}` and `{{continue:N}}` stand for values of step N's answer, and
`{{token:N}}` for the token it carries (a TokenRequest's, or a token Secret's, decoded).
A step may say `as: <token>` (sent instead of the admin's; "" sends none), `headers`
(extra request headers, e.g. Impersonate-User) and `untilPath: <pointer>` (poll until the
answer has that JSON pointer).
A step may say `until: <status>` (poll for at most 30 s until the answer has that status,
for the work of background controllers) and `watch: true` (the answer is a watch stream,
ended by the request's timeoutSeconds)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios_rbac  # noqa: E402

GROUP = "diff.example.com"

# A namespaced custom resource with a status subresource, created before any scenario.
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets." + GROUP},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}
# A custom resource whose schema is structural all the way: unknown fields are pruned,
# absent (or null) ones defaulted, one subtree preserved as written.
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets." + GROUP},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                  "listKind": "GadgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 3},
                    "colour": {"type": "string"},
                    "parts": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "count": {"type": "integer", "default": 1}}}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                    "level": {"type": "integer", "minimum": 1, "maximum": 10},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": True},
                    "limits": {"type": "object", "required": ["cpu"],
                               "properties": {"cpu": {"type": "string"}}},
                    "ratio": {"type": "number", "multipleOf": 0.5},
                    "batch": {"type": "integer", "multipleOf": 3},
                    "weight": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "uuid"},
                    "addr": {"type": "string", "format": "ipv4"},
                    "labels": {"type": "object", "maxProperties": 2,
                               "additionalProperties": {"type": "string"}},
                    "opts": {"type": "object", "minProperties": 1,
                             "additionalProperties": {"type": "string"}},
                    "choice": {"type": "object",
                               "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                               "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                    "either": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
                    "both": {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^x"}]},
                    "never": {"type": "string", "not": {"enum": ["forbidden"]}},
                }},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            }}},
        }],
    },
}
SETUP = [{"method": "POST", "path": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
          "body": CRD},
         {"method": "POST", "path": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
          "body": GADGET_CRD}]
SETUP_WAIT = [{"method": "GET", "path": "/apis/" + GROUP + "/v1/widgets"},
              {"method": "GET", "path": "/apis/" + GROUP + "/v1/gadgets"}]


def step(method, path, body=None, **extra):
    out = {"method": method, "path": path}
    if body is not None:
        out["body"] = body
    out.update(extra)
    return out


class Kind:
    """How to build objects of one kind and where they live."""

    def __init__(self, short, api_version, kind, plural, field, value, other):
        self.short, self.api_version, self.kind, self.plural = short, api_version, kind, plural
        self.field, self.value, self.other = field, value, other

    @property
    def base(self):
        prefix = "/api/" if "/" not in self.api_version else "/apis/"
        return prefix + self.api_version + "/namespaces/$NS/" + self.plural

    def path(self, name):
        return self.base + "/" + name

    def obj(self, name, value=None, labels=None, rv=None, **meta):
        metadata = {"name": name, **meta}
        if labels:
            metadata["labels"] = labels
        if rv:
            metadata["resourceVersion"] = rv
        body = {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}
        body[self.field] = value if value is not None else self.value
        return body


CONFIGMAP = Kind("cm", "v1", "ConfigMap", "configmaps", "data", {"k": "v"}, {"k": "w"})
SECRET = Kind("secret", "v1", "Secret", "secrets", "stringData", {"k": "v"}, {"k": "w"})
WIDGET = Kind("widget", GROUP + "/v1", "Widget", "widgets", "spec", {"size": 1}, {"size": 2})
SERVICE = Kind("svc", "v1", "Service", "services", "spec",
               {"ports": [{"port": 80, "name": "http"}], "selector": {"app": "a"}},
               {"ports": [{"port": 81, "name": "http"}], "selector": {"app": "a"}})


def crud(k):
    s = k.short
    p, b = k.path, k.base
    out = {
        s + "-create-get": [step("POST", b, k.obj("a")), step("GET", p("a"))],
        s + "-create-twice": [step("POST", b, k.obj("a")), step("POST", b, k.obj("a"))],
        s + "-get-missing": [step("GET", p("nope"))],
        s + "-update": [step("POST", b, k.obj("a")),
                        step("PUT", p("a"), k.obj("a", k.other, rv="{{rv:0}}")),
                        step("GET", p("a"))],
        s + "-update-stale": [step("POST", b, k.obj("a")),
                              step("PUT", p("a"), k.obj("a", k.other, rv="{{rv:0}}")),
                              step("PUT", p("a"), k.obj("a", k.value, rv="{{rv:0}}"))],
        s + "-update-unconditional": [step("POST", b, k.obj("a")),
                                      step("PUT", p("a"), k.obj("a", k.other))],
        s + "-update-missing": [step("PUT", p("nope"), k.obj("nope"))],
        s + "-update-noop": [step("POST", b, k.obj("a")),
                             step("PUT", p("a"), k.obj("a", rv="{{rv:0}}"))],
        s + "-update-labels": [step("POST", b, k.obj("a")),
                               step("PUT", p("a"), k.obj("a", labels={"x": "y"}, rv="{{rv:0}}"))],
        s + "-delete": [step("POST", b, k.obj("a")), step("DELETE", p("a")),
                        step("GET", p("a"))],
        s + "-delete-missing": [step("DELETE", p("nope"))],
        s + "-delete-precondition": [
            step("POST", b, k.obj("a")),
            step("DELETE", p("a"), {"apiVersion": "v1", "kind": "DeleteOptions",
                                    "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
            step("GET", p("a"))],
        s + "-delete-precondition-rv": [
            step("POST", b, k.obj("a")),
            step("PUT", p("a"), k.obj("a", k.other, rv="{{rv:0}}")),
            step("DELETE", p("a"), {"apiVersion": "v1", "kind": "DeleteOptions",
                                    "preconditions": {"resourceVersion": "{{rv:0}}"}})],
        s + "-generate-name": [step("POST", b, {**k.obj(""), "metadata": {"generateName": "gen-"}})],
        s + "-invalid-name": [step("POST", b, k.obj("Bad_Name"))],
        s + "-namespace-mismatch": [step("POST", b, k.obj("a", namespace="elsewhere"))],
        s + "-name-mismatch": [step("POST", b, k.obj("a")), step("PUT", p("a"), k.obj("b"))],
        s + "-dry-run-create": [step("POST", b + "?dryRun=All", k.obj("a")), step("GET", p("a"))],
        s + "-dry-run-delete": [step("POST", b, k.obj("a")), step("DELETE", p("a") + "?dryRun=All"),
                                step("GET", p("a"))],
        s + "-list": [step("POST", b, k.obj("b")), step("POST", b, k.obj("a")), step("GET", b)],
        s + "-missing-namespace": [step("POST", b.replace("$NS", "d-does-not-exist"), k.obj("a"))],
        s + "-delete-collection": [step("POST", b, k.obj("a", labels={"g": "1"})),
                                   step("POST", b, k.obj("b", labels={"g": "2"})),
                                   step("DELETE", b + "?labelSelector=g%3D1"),
                                   step("GET", b)],
    }
    return out


def deletes():
    """DELETE answers the deleted object for some kinds and a Status for the others."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"pods": "1"}}}
    base = "/api/v1/namespaces/$NS/resourcequotas"
    return {
        "quota-delete-returns-object": [step("POST", base, quota), step("DELETE", base + "/q")],
    }


def patches():
    cm, w, svc = CONFIGMAP, WIDGET, SERVICE
    merge = "application/merge-patch+json"
    jsonp = "application/json-patch+json"
    smp = "application/strategic-merge-patch+json"
    out = {}
    for k in (cm, w):
        s = k.short
        field = k.field
        seeded = k.obj("a", {"k": "v", "j": "u"} if k is cm else {"size": 1, "color": "red"},
                       labels={"app": "a", "tier": "web"})
        first = step("POST", k.base, seeded)
        key = "k" if k is cm else "size"
        other = "j" if k is cm else "color"
        new = "w" if k is cm else 3
        out.update({
            s + "-merge-set": [first, step("PATCH", k.path("a"), {field: {key: new}}, contentType=merge)],
            s + "-merge-null": [first, step("PATCH", k.path("a"), {field: {other: None}}, contentType=merge)],
            s + "-merge-labels": [first, step("PATCH", k.path("a"),
                                             {"metadata": {"labels": {"app": None, "new": "x"}}},
                                             contentType=merge)],
            s + "-merge-missing": [step("PATCH", k.path("nope"), {field: {key: new}}, contentType=merge)],
            s + "-merge-stale-rv": [first,
                                    step("PATCH", k.path("a"), {field: {key: new}}, contentType=merge),
                                    step("PATCH", k.path("a"),
                                         {"metadata": {"resourceVersion": "{{rv:0}}"}, field: {key: new}},
                                         contentType=merge)],
            s + "-merge-bad-json": [first, step("PATCH", k.path("a"), "{not json", contentType=merge)],
            s + "-json-add": [first, step("PATCH", k.path("a"),
                                          [{"op": "add", "path": "/" + field + "/added", "value": "x"}],
                                          contentType=jsonp)],
            s + "-json-replace": [first, step("PATCH", k.path("a"),
                                              [{"op": "replace", "path": "/" + field + "/" + key, "value": new}],
                                              contentType=jsonp)],
            s + "-json-remove": [first, step("PATCH", k.path("a"),
                                             [{"op": "remove", "path": "/" + field + "/" + other}],
                                             contentType=jsonp)],
            s + "-json-remove-missing": [first, step("PATCH", k.path("a"),
                                                     [{"op": "remove", "path": "/" + field + "/absent"}],
                                                     contentType=jsonp)],
            s + "-json-test-pass": [first, step("PATCH", k.path("a"),
                                                [{"op": "test", "path": "/" + field + "/" + key,
                                                  "value": "v" if k is cm else 1},
                                                 {"op": "replace", "path": "/" + field + "/" + key, "value": new}],
                                                contentType=jsonp)],
            s + "-json-test-fail": [first, step("PATCH", k.path("a"),
                                                [{"op": "test", "path": "/" + field + "/" + key, "value": "zzz"}],
                                                contentType=jsonp)],
            s + "-json-test-null-missing": [first, step("PATCH", k.path("a"),
                                                        [{"op": "test", "path": "/metadata/finalizers", "value": None},
                                                         {"op": "add", "path": "/metadata/finalizers", "value": ["x/y"]}],
                                                        contentType=jsonp),
                                            step("PATCH", k.path("a"),
                                                 [{"op": "remove", "path": "/metadata/finalizers"}],
                                                 contentType=jsonp)],
            s + "-json-move": [first, step("PATCH", k.path("a"),
                                           [{"op": "move", "from": "/" + field + "/" + other,
                                             "path": "/" + field + "/moved"}], contentType=jsonp)],
            s + "-json-copy": [first, step("PATCH", k.path("a"),
                                           [{"op": "copy", "from": "/" + field + "/" + key,
                                             "path": "/" + field + "/copied"}], contentType=jsonp)],
            s + "-json-bad-op": [first, step("PATCH", k.path("a"),
                                             [{"op": "frobnicate", "path": "/" + field}], contentType=jsonp)],
            s + "-json-rv": [first, step("PATCH", k.path("a"),
                                         [{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"}],
                                         contentType=jsonp)],
        })
    out.update({
        "cm-smp-data": [step("POST", cm.base, cm.obj("a", {"k": "v", "j": "u"})),
                        step("PATCH", cm.path("a"), {"data": {"k": None, "n": "m"}}, contentType=smp)],
        "widget-smp-refused": [step("POST", w.base, w.obj("a")),
                               step("PATCH", w.path("a"), {"spec": {"size": 2}}, contentType=smp)],
        "svc-smp-add-port": [step("POST", svc.base, svc.obj("a")),
                             step("PATCH", svc.path("a"), {"spec": {"ports": [{"port": 443, "name": "https"}]}},
                                  contentType=smp)],
        "svc-smp-update-port": [step("POST", svc.base, svc.obj("a")),
                                step("PATCH", svc.path("a"),
                                     {"spec": {"ports": [{"port": 80, "name": "web"}]}}, contentType=smp)],
        "svc-smp-delete-port": [step("POST", svc.base, svc.obj("a", {"ports": [{"port": 80, "name": "http"},
                                                                              {"port": 443, "name": "https"}],
                                                                    "selector": {"app": "a"}})),
                                step("PATCH", svc.path("a"),
                                     {"spec": {"ports": [{"port": 80, "$patch": "delete"}]}}, contentType=smp)],
        "svc-smp-replace-ports": [step("POST", svc.base, svc.obj("a")),
                                  step("PATCH", svc.path("a"),
                                       {"spec": {"ports": [{"port": 90, "name": "only"}, {"$patch": "replace"}]}},
                                       contentType=smp)],
        "svc-smp-element-order": [step("POST", svc.base, svc.obj("a", {"ports": [{"port": 80, "name": "http"},
                                                                                {"port": 443, "name": "https"}],
                                                                      "selector": {"app": "a"}})),
                                  step("PATCH", svc.path("a"),
                                       {"spec": {"$setElementOrder/ports": [{"port": 443}, {"port": 80}]}},
                                       contentType=smp)],
        "cm-smp-delete-from-finalizers": [
            step("POST", cm.base, cm.obj("a", finalizers=["a.io/x", "a.io/y"])),
            step("PATCH", cm.path("a"), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"]}},
                 contentType=smp),
            step("PATCH", cm.path("a"), {"metadata": {"finalizers": None}}, contentType=merge)],
        "svc-smp-retain-keys": [step("POST", svc.base, svc.obj("a")),
                                step("PATCH", svc.path("a"),
                                     {"spec": {"$retainKeys": ["ports", "selector", "type"], "type": "ClusterIP",
                                               "sessionAffinity": None}}, contentType=smp)],
        "svc-smp-selector-null": [step("POST", svc.base, svc.obj("a")),
                                  step("PATCH", svc.path("a"), {"spec": {"selector": {"app": None, "b": "c"}}},
                                       contentType=smp)],
        "cm-patch-unsupported-type": [step("POST", cm.base, cm.obj("a")),
                                      step("PATCH", cm.path("a"), {"data": {}}, contentType="text/plain")],
    })
    return out


def ssa():
    apply = "application/apply-patch+yaml"
    out = {}
    for k in (CONFIGMAP, WIDGET):
        s, p = k.short, k.path
        key = "k" if k is CONFIGMAP else "size"
        two = {"k": "v", "j": "u"} if k is CONFIGMAP else {"size": 1, "color": "red"}
        v1 = "v" if k is CONFIGMAP else 1
        v2 = "w" if k is CONFIGMAP else 2

        def ap(manager, body, extra=""):
            return step("PATCH", p("a") + "?fieldManager=" + manager + extra, body, contentType=apply)

        out.update({
            s + "-apply-create": [ap("a", k.obj("a"))],
            s + "-apply-no-manager": [step("PATCH", p("a"), k.obj("a"), contentType=apply)],
            s + "-apply-twice": [ap("a", k.obj("a")), ap("a", k.obj("a"))],
            s + "-apply-conflict": [ap("a", k.obj("a", {key: v1})), ap("b", k.obj("a", {key: v2}))],
            s + "-apply-force": [ap("a", k.obj("a", {key: v1})), ap("b", k.obj("a", {key: v2}), "&force=true"),
                                 ap("a", k.obj("a", {key: v1}))],
            s + "-apply-remove-field": [ap("a", k.obj("a", two)), ap("a", k.obj("a", {key: v1}))],
            s + "-apply-shared": [ap("a", k.obj("a", {key: v1})), ap("b", k.obj("a", {key: v1})),
                                  ap("a", {"apiVersion": k.api_version, "kind": k.kind, "metadata": {"name": "a"}})],
            s + "-apply-after-update": [step("POST", k.base, k.obj("a", {key: v1})),
                                        ap("a", k.obj("a", {key: v2}))],
            s + "-apply-dry-run": [ap("a", k.obj("a"), "&dryRun=All"), step("GET", p("a"))],
            s + "-apply-labels": [ap("a", k.obj("a", labels={"x": "1", "y": "2"})),
                                  ap("a", k.obj("a", labels={"x": "1"}))],
            s + "-apply-name-mismatch": [ap("a", k.obj("b"))],
            s + "-apply-yaml": [step("PATCH", p("a") + "?fieldManager=y",
                                     "apiVersion: %s\nkind: %s\nmetadata:\n  name: a\n" % (k.api_version, k.kind),
                                     contentType=apply)],
        })
    out.update(ssa_lists())
    return out


def ssa_lists():
    """Server-side apply of a list merged by key (a Service's ports, keyed by port and
    protocol): items owned apart, conflicts per item field, an item withdrawn by its owner."""
    apply = "application/apply-patch+yaml"
    k, p = SERVICE, SERVICE.path

    def ap(manager, ports, extra=""):
        body = k.obj("a", {"ports": ports, "selector": {"app": "a"}})
        return step("PATCH", p("a") + "?fieldManager=" + manager + extra, body, contentType=apply)

    # Each port names its protocol: 1.20 refuses an applied item without every key field
    # (later servers default protocol to TCP first, as the sandbox does).
    http = {"port": 80, "name": "http", "protocol": "TCP"}
    https = {"port": 443, "name": "https", "protocol": "TCP"}
    alt = {"port": 8080, "name": "alt", "protocol": "TCP"}
    return {
        "svc-apply-ports-merge": [
            step("POST", k.base, k.obj("a", {"ports": [http], "selector": {"app": "a"}})),
            ap("a", [http, https]),
            ap("b", [alt]),
            ap("a", [http]),
            step("GET", p("a")),
        ],
        "svc-apply-ports-conflict": [
            step("POST", k.base, k.obj("a", {"ports": [http], "selector": {"app": "a"}})),
            ap("b", [{**http, "targetPort": 8080}]),
            ap("b", [{**http, "targetPort": 8080}], "&force=true"),
            step("GET", p("a")),
        ],
        "svc-apply-ports-after-create": [
            step("POST", k.base, k.obj("a", {"ports": [http, https], "selector": {"app": "a"}})),
            ap("a", [http, https]),
        ],
    }


def status():
    w, svc = WIDGET, SERVICE
    merge = "application/merge-patch+json"
    seeded = {**w.obj("a"), "status": {"phase": "new"}}
    return {
        "widget-create-drops-status": [step("POST", w.base, seeded)],
        "widget-put-ignores-status": [step("POST", w.base, w.obj("a")),
                                      step("PUT", w.path("a"), {**w.obj("a", {"size": 2}, rv="{{rv:0}}"),
                                                                "status": {"phase": "x"}})],
        "widget-status-put-ignores-spec": [
            step("POST", w.base, w.obj("a")),
            step("PUT", w.path("a") + "/status", {**w.obj("a", {"size": 9}, rv="{{rv:0}}"),
                                                   "status": {"phase": "ready"}}),
            step("GET", w.path("a"))],
        "widget-status-merge": [step("POST", w.base, w.obj("a")),
                                step("PATCH", w.path("a") + "/status", {"status": {"phase": "ready"}},
                                     contentType=merge),
                                step("GET", w.path("a") + "/status")],
        "widget-status-generation": [step("POST", w.base, w.obj("a")),
                                     step("PATCH", w.path("a") + "/status", {"status": {"n": 1}}, contentType=merge),
                                     step("PATCH", w.path("a"), {"spec": {"size": 5}}, contentType=merge),
                                     step("PATCH", w.path("a"), {"metadata": {"labels": {"l": "1"}}},
                                          contentType=merge)],
        "widget-status-missing": [step("GET", w.path("nope") + "/status")],
        "svc-status-merge": [step("POST", svc.base, svc.obj("a")),
                             step("PATCH", svc.path("a") + "/status",
                                  {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}, contentType=merge)],
        "svc-put-keeps-status": [step("POST", svc.base, svc.obj("a")),
                                 step("PATCH", svc.path("a") + "/status",
                                      {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}},
                                      contentType=merge),
                                 step("PATCH", svc.path("a"), {"status": {"loadBalancer": {}},
                                                               "metadata": {"labels": {"x": "y"}}},
                                      contentType=merge)],
        "cm-status-not-found": [step("POST", CONFIGMAP.base, CONFIGMAP.obj("a")),
                                step("GET", CONFIGMAP.path("a") + "/status")],
    }


def finalizers():
    merge = "application/merge-patch+json"
    out = {}
    for k in (CONFIGMAP, WIDGET):
        s, p = k.short, k.path
        held = k.obj("a", finalizers=["example.com/hold"])
        out.update({
            s + "-finalizer-delete": [step("POST", k.base, held), step("DELETE", p("a")), step("GET", p("a"))],
            s + "-finalizer-release": [step("POST", k.base, held), step("DELETE", p("a")),
                                       step("PATCH", p("a"), {"metadata": {"finalizers": None}}, contentType=merge),
                                       step("GET", p("a"))],
            s + "-finalizer-no-new": [step("POST", k.base, held), step("DELETE", p("a")),
                                      step("PATCH", p("a"),
                                           {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
                                           contentType=merge)],
            s + "-finalizer-delete-twice": [step("POST", k.base, held), step("DELETE", p("a")),
                                            step("DELETE", p("a"))],
            s + "-finalizer-update-while-deleting": [
                step("POST", k.base, held), step("DELETE", p("a")),
                step("PATCH", p("a"), {"metadata": {"labels": {"still": "writable"}}}, contentType=merge),
                step("PATCH", p("a"), {"metadata": {"finalizers": []}}, contentType=merge),
                step("GET", p("a"))],
        })
    return out


def gc():
    cm = CONFIGMAP

    def dependent(name, uid_step, **extra):
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "{{uid:%d}}" % uid_step}
        ref.update(extra)
        return cm.obj(name, ownerReferences=[ref])

    def delete(policy):
        return step("DELETE", cm.path("owner"), {"apiVersion": "v1", "kind": "DeleteOptions",
                                                 "propagationPolicy": policy})

    return {
        "gc-background": [step("POST", cm.base, cm.obj("owner")), step("POST", cm.base, dependent("dep", 0)),
                          delete("Background"), step("GET", cm.path("dep"), until=404)],
        "gc-default-policy": [step("POST", cm.base, cm.obj("owner")), step("POST", cm.base, dependent("dep", 0)),
                              step("DELETE", cm.path("owner")), step("GET", cm.path("dep"), until=404)],
        "gc-orphan": [step("POST", cm.base, cm.obj("owner")), step("POST", cm.base, dependent("dep", 0)),
                      delete("Orphan"), step("GET", cm.path("owner"), until=404), step("GET", cm.path("dep"))],
        "gc-foreground": [step("POST", cm.base, cm.obj("owner")),
                          step("POST", cm.base, dependent("dep", 0, blockOwnerDeletion=True)),
                          delete("Foreground"), step("GET", cm.path("dep"), until=404),
                          step("GET", cm.path("owner"), until=404)],
        "gc-missing-owner": [step("POST", cm.base, cm.obj("owner")), step("DELETE", cm.path("owner")),
                             step("POST", cm.base, dependent("dep", 0)), step("GET", cm.path("dep"), until=404)],
        "gc-two-owners": [step("POST", cm.base, cm.obj("owner")), step("POST", cm.base, cm.obj("other")),
                          step("POST", cm.base, cm.obj("dep", ownerReferences=[
                              {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "{{uid:0}}"},
                              {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "{{uid:1}}"}])),
                          step("DELETE", cm.path("owner")), step("GET", cm.path("owner"), until=404),
                          step("GET", cm.path("dep"), sleep=1)],
    }


def namespaces():
    ns = "/api/v1/namespaces"
    cm = CONFIGMAP
    other = "$NS-x"

    def namespace(name, **meta):
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **meta}}

    return {
        "ns-create-get": [step("POST", ns, namespace(other, labels={"team": "a"})), step("GET", ns + "/" + other)],
        "ns-create-twice": [step("POST", ns, namespace(other)), step("POST", ns, namespace(other))],
        "ns-delete-terminating": [step("POST", ns, namespace(other)),
                                  step("POST", "/api/v1/namespaces/" + other + "/configmaps",
                                       {**cm.obj("a"), "metadata": {"name": "a", "finalizers": ["example.com/hold"]}}),
                                  step("DELETE", ns + "/" + other),
                                  step("POST", "/api/v1/namespaces/" + other + "/configmaps", cm.obj("b")),
                                  step("PATCH", "/api/v1/namespaces/" + other + "/configmaps/a",
                                       {"metadata": {"finalizers": None}},
                                       contentType="application/merge-patch+json"),
                                  step("GET", ns + "/" + other, until=404)],
        "ns-delete-empty": [step("POST", ns, namespace(other)), step("DELETE", ns + "/" + other),
                            step("GET", ns + "/" + other, until=404)],
        "ns-delete-missing": [step("DELETE", ns + "/d-does-not-exist")],
        "ns-invalid-name": [step("POST", ns, namespace("Not_Valid"))],
        "ns-update-labels": [step("POST", ns, namespace(other)),
                             step("PATCH", ns + "/" + other, {"metadata": {"labels": {"a": "b"}}},
                                  contentType="application/merge-patch+json")],
    }


# The Accept header of metadata-only requests: PARTIAL + ["List"] + META_V1.
PARTIAL = "application/json;as=PartialObjectMetadata"
META_V1 = ";g=meta.k8s.io;v=v1"


def selectors():
    cm, secret = CONFIGMAP, SECRET
    seed = [step("POST", cm.base, cm.obj("a", labels={"app": "a", "env": "prod"})),
            step("POST", cm.base, cm.obj("b", labels={"app": "b", "env": "dev"})),
            step("POST", cm.base, cm.obj("c", labels={"env": "prod"})),
            step("POST", cm.base, cm.obj("d"))]

    def listing(query):
        return seed + [step("GET", cm.base + "?" + query)]

    out = {
        "sel-eq": listing("labelSelector=app%3Da"),
        "sel-double-eq": listing("labelSelector=app%3D%3Da"),
        "sel-neq": listing("labelSelector=app%21%3Da"),
        "sel-in": listing("labelSelector=app+in+%28a%2Cb%29"),
        "sel-notin": listing("labelSelector=app+notin+%28a%29"),
        "sel-exists": listing("labelSelector=app"),
        "sel-not-exists": listing("labelSelector=%21app"),
        "sel-and": listing("labelSelector=env%3Dprod%2Capp%3Da"),
        "sel-none": listing("labelSelector=app%3Dzzz"),
        "sel-invalid": listing("labelSelector=app%3D%3D%3Da"),
        "sel-field-name": listing("fieldSelector=metadata.name%3Db"),
        "sel-field-not-name": listing("fieldSelector=metadata.name%21%3Db"),
        "sel-field-namespace": listing("fieldSelector=metadata.namespace%3D$NS"),
        "sel-field-unsupported": listing("fieldSelector=data.k%3Dv"),
        "sel-field-and-label": listing("fieldSelector=metadata.name%21%3Da&labelSelector=env%3Dprod"),
        "sel-limit": listing("limit=2"),
        "sel-limit-continue": seed + [step("GET", cm.base + "?limit=3"),
                                      step("GET", cm.base + "?limit=3&continue={{continue:4}}")],
        "sel-limit-label": listing("limit=1&labelSelector=env%3Dprod"),
        "sel-bad-continue": listing("limit=1&continue=garbage"),
        "sel-secret-type": [step("POST", secret.base, secret.obj("s1")),
                            step("POST", secret.base, {**secret.obj("s2"), "type": "example.com/custom"}),
                            step("GET", secret.base + "?fieldSelector=type%3Dexample.com%2Fcustom")],
        "sel-all-namespaces": seed + [step("GET", "/api/v1/configmaps?labelSelector=app%3Da%2Cenv%3Dprod"
                                               "&fieldSelector=metadata.namespace%3D$NS")],
        "sel-widget-label": [step("POST", WIDGET.base, WIDGET.obj("a", labels={"x": "1"})),
                             step("POST", WIDGET.base, WIDGET.obj("b", labels={"x": "2"})),
                             step("GET", WIDGET.base + "?labelSelector=x+in+%282%29")],
        "sel-widget-field-name": [step("POST", WIDGET.base, WIDGET.obj("a")),
                                  step("POST", WIDGET.base, WIDGET.obj("b")),
                                  step("GET", WIDGET.base + "?fieldSelector=metadata.name%3Da")],
        # Fields a kind does not index are refused, in one of two sentences by kind.
        "sel-widget-field-unsupported": [step("GET", WIDGET.base + "?fieldSelector=spec.size%3D1")],
        "sel-secret-field-unsupported": [step("GET", secret.base + "?fieldSelector=data.k%3Dv")],
        "sel-event-fields": [step("GET", "/api/v1/namespaces/$NS/events"
                                          "?fieldSelector=involvedObject.kind%3DPod%2CreportingComponent%3Dx"),
                             step("GET", "/apis/events.k8s.io/v1/namespaces/$NS/events"
                                          "?fieldSelector=regarding.kind%3DPod%2CreportingController%3Dx"),
                             step("GET", "/apis/events.k8s.io/v1/namespaces/$NS/events"
                                          "?fieldSelector=reportingComponent%3Dx"),
                             step("GET", "/api/v1/namespaces/$NS/events?fieldSelector=note%3Dx")],
        "sel-service-field-unsupported": [step("GET", SERVICE.base + "?fieldSelector=spec.clusterIP%3Dx")],
        "sel-watch-field-unsupported": [step("GET", cm.base + "?watch=1&timeoutSeconds=1"
                                                  "&fieldSelector=data.k%3Dv")],
        # Metadata-only answers, as metadata informers ask for them.
        "sel-metadata-list": seed + [step("GET", cm.base + "?labelSelector=env%3Dprod",
                                          accept=PARTIAL + "List" + META_V1)],
        "sel-metadata-get": seed + [step("GET", cm.path("a"), accept=PARTIAL + META_V1)],
        "sel-widget-metadata-list": [step("POST", WIDGET.base, WIDGET.obj("a")),
                                     step("GET", WIDGET.base, accept=PARTIAL + "List" + META_V1)],
        "sel-metadata-watch": seed + [step("GET", cm.base + "?watch=1&timeoutSeconds=1"
                                                  "&resourceVersion={{rv:1}}",
                                           watch=True, accept=PARTIAL + META_V1)],
    }
    return out


def paging():
    """Lists at a resourceVersion: continue pages and `resourceVersionMatch` read the objects as
    they were then, whatever changed since."""
    cm = CONFIGMAP
    seed = [step("POST", cm.base, cm.obj(name)) for name in ("a", "b", "c", "d")]
    merge = "application/merge-patch+json"
    changes = [step("POST", cm.base, cm.obj("e")),
               step("PATCH", cm.path("c"), {"data": {"k": "changed"}}, contentType=merge),
               step("DELETE", cm.path("d"))]
    return {
        # Step 4 is the first page; 5-7 change what follows it; 8 continues at step 4's RV.
        "page-snapshot": seed + [step("GET", cm.base + "?limit=2")] + changes
        + [step("GET", cm.base + "?limit=2&continue={{continue:4}}"),
           step("GET", cm.base + "?limit=2&continue={{continue:8}}"),
           step("GET", cm.base)],
        "page-continue-with-rv": seed + [
            step("GET", cm.base + "?limit=1"),
            step("GET", cm.base + "?limit=1&resourceVersion={{rv:4}}&continue={{continue:4}}")],
        "page-continue-unknown-version": [step("GET", cm.base + "?limit=1&continue="
                                               "eyJ2IjoibWV0YS5rOHMuaW8vdjIiLCJydiI6MSwic3RhcnQiOiJhXHUwMDAwIn0")],
        "page-continue-empty-start": [step("GET", cm.base + "?limit=1&continue="
                                           "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ")],
        "rv-exact": seed + changes + [
            step("GET", cm.base + "?resourceVersion={{rv:1}}&resourceVersionMatch=Exact"),
            step("GET", cm.base + "?resourceVersion={{rv:3}}&resourceVersionMatch=Exact&limit=3")],
        "rv-limit-is-exact": seed + changes + [step("GET", cm.base + "?resourceVersion={{rv:3}}&limit=10")],
        "rv-not-older-than": seed + [
            step("GET", cm.base + "?resourceVersion={{rv:1}}&resourceVersionMatch=NotOlderThan")],
        "rv-unset-match": seed + [step("GET", cm.base + "?resourceVersion={{rv:1}}")],
        "rv-match-without-rv": [step("GET", cm.base + "?resourceVersionMatch=Exact")],
        "rv-match-exact-zero": [step("GET", cm.base + "?resourceVersion=0&resourceVersionMatch=Exact")],
        "rv-match-unknown": [step("GET", cm.base + "?resourceVersion=1&resourceVersionMatch=Newest")],
        "rv-match-with-continue": seed + [
            step("GET", cm.base + "?limit=1"),
            step("GET", cm.base + "?limit=1&resourceVersion={{rv:4}}&resourceVersionMatch=Exact"
                                  "&continue={{continue:4}}")],
        "rv-match-watch": [step("GET", cm.base + "?watch=1&timeoutSeconds=1&resourceVersion=1"
                                                 "&resourceVersionMatch=NotOlderThan")],
        "rv-exact-future": [step("GET", cm.base + "?resourceVersion=999999999&resourceVersionMatch=Exact")],
        "rv-not-older-than-future": [step("GET", cm.base + "?resourceVersion=999999999"
                                                       "&resourceVersionMatch=NotOlderThan")],
        "rv-zero-limit": seed + [step("GET", cm.base + "?resourceVersion=0&limit=1")],
        "rv-not-a-number-unset-match": [step("GET", cm.base + "?resourceVersion=abc")],
        "rv-not-a-number-limit": [step("GET", cm.base + "?resourceVersion=abc&limit=2")],
        "rv-not-a-number": [step("GET", cm.base + "?resourceVersion=abc&resourceVersionMatch=Exact")],
    }


def watches():
    cm, w = CONFIGMAP, WIDGET
    merge = "application/merge-patch+json"

    def watch(path, query):
        return step("GET", path + "?watch=1&timeoutSeconds=1" + query, watch=True)

    def story(k):
        return [step("POST", k.base, k.obj("a", labels={"app": "a"})),
                step("PATCH", k.path("a"), {"metadata": {"labels": {"seen": "yes"}}}, contentType=merge),
                step("POST", k.base, k.obj("b", labels={"app": "b"})),
                step("DELETE", k.path("a"))]

    out = {}
    for k in (cm, w):
        s = k.short
        out.update({
            s + "-watch-from-create": story(k) + [watch(k.base, "&resourceVersion={{rv:0}}")],
            s + "-watch-label": story(k) + [watch(k.base, "&resourceVersion={{rv:0}}&labelSelector=app%3Db")],
            s + "-watch-field": story(k) + [watch(k.base, "&resourceVersion={{rv:0}}"
                                                           "&fieldSelector=metadata.name%3Da")],
            s + "-watch-current": story(k) + [watch(k.base, "")],
            s + "-watch-rv-zero": story(k) + [watch(k.base, "&resourceVersion=0")],
            s + "-watch-from-last": story(k) + [watch(k.base, "&resourceVersion={{rv:3}}")],
        })
    out.update({
        "cm-watch-finalizer-sequence": [
            step("POST", cm.base, cm.obj("a", finalizers=["example.com/hold"])),
            step("DELETE", cm.path("a")),
            step("PATCH", cm.path("a"), {"metadata": {"finalizers": None}}, contentType=merge),
            watch(cm.base, "&resourceVersion={{rv:0}}")],
        "cm-watch-noop-update": [
            step("POST", cm.base, cm.obj("a")),
            step("PUT", cm.path("a"), cm.obj("a", rv="{{rv:0}}")),
            step("PATCH", cm.path("a"), {"data": {"k": "z"}}, contentType=merge),
            watch(cm.base, "&resourceVersion={{rv:0}}")],
        "cm-watch-list-rv": [
            step("POST", cm.base, cm.obj("a")),
            step("GET", cm.base),
            step("POST", cm.base, cm.obj("b")),
            watch(cm.base, "&resourceVersion={{rv:1}}")],
        "widget-watch-status": [
            step("POST", w.base, w.obj("a")),
            step("PATCH", w.path("a") + "/status", {"status": {"phase": "x"}}, contentType=merge),
            watch(w.base, "&resourceVersion={{rv:0}}")],
    })
    # A label-filtered watch sees an object enter the selection as ADDED and leave it as
    # DELETED (the object as it was, at the change's resourceVersion).
    for k in (cm, w):
        out[k.short + "-watch-label-transitions"] = [
            step("POST", k.base, k.obj("a", labels={"app": "x"})),
            step("PATCH", k.path("a"), {"metadata": {"labels": {"app": "b"}}}, contentType=merge),
            step("PATCH", k.path("a"), {"metadata": {"labels": {"seen": "yes"}}}, contentType=merge),
            step("PATCH", k.path("a"), {"metadata": {"labels": {"app": "c"}}}, contentType=merge),
            watch(k.base, "&resourceVersion={{rv:0}}&labelSelector=app%3Db")]
    return out


def errors():
    cm = CONFIGMAP
    return {
        "err-unknown-resource": [step("GET", "/api/v1/namespaces/$NS/frobnicators")],
        "err-unknown-group": [step("GET", "/apis/nothing.example.com/v1/things")],
        "err-unknown-version": [step("GET", "/apis/" + GROUP + "/v9/namespaces/$NS/widgets")],
        "err-bad-json": [step("POST", cm.base, "{oops")],
        "err-kind-mismatch": [step("POST", cm.base, {**SECRET.obj("a")})],
        "err-missing-name": [step("POST", cm.base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})],
        "err-namespaced-without-namespace": [step("GET", "/api/v1/configmaps/a")],
        "err-put-to-collection": [step("PUT", cm.base, cm.obj("a"))],
        "err-name-too-long": [step("POST", cm.base, cm.obj("x" * 254))],
        "err-label-value-invalid": [step("POST", cm.base, cm.obj("a", labels={"k": "not valid!"}))],
        "err-label-key-invalid": [step("POST", cm.base, cm.obj("a", labels={"-k": "v"}))],
        "err-get-collection-by-empty-name": [step("GET", cm.base + "/")],
        "err-widget-no-kind": [step("POST", WIDGET.base, {"apiVersion": WIDGET.api_version,
                                                          "metadata": {"name": "a"}})],
    }


def schema():
    """Custom resources stored as their CRD's structural schema says: pruned and defaulted."""
    base = "/apis/" + GROUP + "/v1/namespaces/$NS/gadgets"
    merge = "application/merge-patch+json"

    def gadget(name, spec, **extra):
        return {"apiVersion": GROUP + "/v1", "kind": "Gadget", "metadata": {"name": name},
                "spec": spec, **extra}

    return {
        "gadget-prune-and-default": [
            step("POST", base, gadget("a", {"colour": "red", "unknown": 1,
                                            "parts": [{"name": "x", "extra": True}],
                                            "free": {"anything": {"goes": 1}}},
                                      top={"level": 1})),
            step("GET", base + "/a")],
        "gadget-null-is-defaulted": [step("POST", base, gadget("a", {"size": None}))],
        "gadget-update-prunes": [
            step("POST", base, gadget("a", {"size": 1})),
            step("PATCH", base + "/a", {"spec": {"unknown": "x", "colour": "blue"}}, contentType=merge)],
        # One broken rule each (several are listed in Go's map order: below).
        "gadget-invalid-type": [step("POST", base, gadget("a", {"level": "high"}))],
        "gadget-invalid-minimum": [step("POST", base, gadget("a", {"level": 0}))],
        "gadget-invalid-maximum": [step("POST", base, gadget("a", {"level": 11}))],
        "gadget-invalid-enum": [step("POST", base, gadget("a", {"mode": "c"}))],
        "gadget-invalid-max-length": [step("POST", base, gadget("a", {"name": "abcdefg"}))],
        "gadget-invalid-pattern": [step("POST", base, gadget("a", {"name": "AB"}))],
        "gadget-invalid-max-items": [step("POST", base, gadget("a", {"tags": ["a", "b", "c"]}))],
        "gadget-invalid-int-or-string": [step("POST", base, gadget("a", {"port": True}))],
        "gadget-invalid-required": [step("POST", base, gadget("a", {"limits": {}}))],
        "gadget-invalid-update": [
            step("POST", base, gadget("a", {"level": 2})),
            step("PATCH", base + "/a", {"spec": {"level": 20}}, contentType=merge)],
        # Several broken rules: every error is listed.
        "gadget-invalid-several": [step("POST", base, gadget("a", {
            "level": 0, "mode": "c", "name": "AB", "tags": ["a", "b", "c"]}))],
        "gadget-invalid-several-nested": [step("POST", base, gadget("a", {
            "size": "big", "parts": [{"name": 1}, {"count": "x"}], "limits": {}}))],
        "gadget-valid-int-or-string": [step("POST", base, gadget("a", {"port": "http", "level": 5}))],
        "gadget-invalid-multiple-of-number": [step("POST", base, gadget("a", {"ratio": 0.3}))],
        "gadget-invalid-multiple-of-integer": [step("POST", base, gadget("a", {"batch": 4}))],
        "gadget-invalid-exclusive-minimum": [step("POST", base, gadget("a", {"weight": 0}))],
        "gadget-invalid-format-date-time": [step("POST", base, gadget("a", {"when": "yesterday"}))],
        "gadget-invalid-format-uuid": [step("POST", base, gadget("a", {"id": "abc"}))],
        "gadget-invalid-format-ipv4": [step("POST", base, gadget("a", {"addr": "300.1.1.1"}))],
        "gadget-invalid-max-properties": [
            step("POST", base, gadget("a", {"labels": {"a": "1", "b": "2", "c": "3"}}))],
        "gadget-invalid-min-properties": [step("POST", base, gadget("a", {"opts": {}}))],
        "gadget-valid-multiples-formats-properties": [step("POST", base, gadget("a", {
            "ratio": 1.5, "batch": 6, "weight": 0.1, "when": "2026-11-25T03:00:00Z",
            "id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "addr": "10.0.0.1",
            "labels": {"a": "1"}, "opts": {"x": "y"}}))],
        "gadget-one-of-none": [step("POST", base, gadget("a", {"choice": {}}))],
        "gadget-one-of-two": [step("POST", base, gadget("a", {"choice": {"a": "1", "b": "2"}}))],
        "gadget-any-of-none": [step("POST", base, gadget("a", {"either": 5}))],
        "gadget-all-of-none": [step("POST", base, gadget("a", {"both": "y"}))],
        "gadget-all-of-one": [step("POST", base, gadget("a", {"both": "yy"}))],
        "gadget-not": [step("POST", base, gadget("a", {"never": "forbidden"}))],
        "gadget-combinations-hold": [step("POST", base, gadget("a", {
            "choice": {"b": "2"}, "either": -1, "both": "xx", "never": "fine"}))],
        "gadget-status-prunes": [
            step("POST", base, gadget("a", {})),
            step("PATCH", base + "/a/status", {"status": {"phase": "on", "unknown": 1}},
                 contentType=merge)],
    }


DEPLOYMENTS = "/apis/apps/v1/namespaces/$NS/deployments"


def deployment(selector, labels):
    spec = {"template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


def pod(spec):
    """Creates the namespace's `default` ServiceAccount (the oracle runs no controller that
    would), then a Pod of `spec` that mounts no token (the oracle makes none)."""
    return [step("POST", "/api/v1/namespaces/$NS/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
            step("POST", "/api/v1/namespaces/$NS/pods",
                 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                  "spec": {"automountServiceAccountToken": False, **spec}})]


def validation():
    """Built-in kinds refused as kube-apiserver refuses them."""
    cm, secret, svc = CONFIGMAP, SECRET, SERVICE
    return {
        "cm-invalid-key": [step("POST", cm.base, cm.obj("a", {"bad key!": "x"}))],
        "cm-key-in-data-and-binary": [step("POST", cm.base, {**cm.obj("a", {"k": "x"}),
                                                             "binaryData": {"k": "eA=="}})],
        "cm-value-not-a-string": [step("POST", cm.base, cm.obj("a", {"k": 1}))],
        "secret-invalid-key": [step("POST", secret.base, {**secret.obj("a", {}),
                                                          "data": {"bad key!": "eA=="}})],
        "secret-type-immutable": [
            step("POST", secret.base, secret.obj("a")),
            step("PATCH", secret.path("a"), {"type": "example.com/other"},
                 contentType="application/merge-patch+json")],
        "svc-no-ports": [step("POST", svc.base, svc.obj("a", {"selector": {"app": "a"}}))],
        "pod-no-containers": pod({}),
        "pod-container-no-image": pod({"containers": [{"name": "c"}]}),
        "pod-container-no-name-no-image": pod({"containers": [{}]}),
        "pod-duplicate-container": pod({"containers": [{"name": "c", "image": "x"},
                                                       {"name": "c", "image": "y"}]}),
        "deploy-no-containers": [step("POST", DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}}, "spec": {}}}})],
        "deploy-selector-expressions": [step("POST", DEPLOYMENTS, deployment(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]},
                                  {"key": "tier", "operator": "DoesNotExist"}]},
            {"app": "b", "tier": "web"}))],
        "deploy-selector-mismatch": [step("POST", DEPLOYMENTS, deployment(
            {"matchLabels": {"app": "a"}}, {"app": "b"}))],
        "deploy-no-selector": [step("POST", DEPLOYMENTS, deployment(None, {"app": "a"}))],
        "deploy-selector-matches": [step("POST", DEPLOYMENTS, deployment(
            {"matchLabels": {"app": "a"}}, {"app": "a", "tier": "web"}))],
        # Fields a built-in kind does not have are dropped (1.20 has no fieldValidation).
        "cm-unknown-fields": [step("POST", cm.base, {**cm.obj("a"), "colour": "red",
                                                     "metadata": {"name": "a", "shade": 1}}),
                              step("PUT", cm.path("a"), {**cm.obj("a", rv="{{rv:0}}"), "size": 2}),
                              step("PATCH", cm.path("a"), {"weight": 3, "data": {"k": "x"}},
                                   contentType="application/merge-patch+json"),
                              step("GET", cm.path("a"))],
        "svc-unknown-nested-field": [step("POST", svc.base, svc.obj("a", {
            "ports": [{"port": 80, "name": "http", "colour": "red"}],
            "selector": {"app": "a"}, "shape": "round"}))],
        "svc-wrong-type": [step("POST", svc.base, svc.obj("a", {
            "ports": [{"port": "eighty", "name": "http"}], "selector": {"app": "a"}}))],
        "svc-headless-no-ports": [step("POST", svc.base, svc.obj("a", {"clusterIP": "None",
                                                                        "selector": {"app": "a"}}))],
    }


def kinds():
    """More built-in kinds refused as kube-apiserver refuses them: network policies, ingresses,
    jobs, workloads, RBAC objects and endpoints, each with the mistakes people make, and the
    defaults and generated fields of valid ones (1.20 serves no batch/v1 CronJob, and names a
    bad endpoint IP twice: neither is recorded)."""
    ns = "/apis/networking.k8s.io/v1/namespaces/$NS/"
    batch = "/apis/batch/v1/namespaces/$NS/"
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/$NS/"
    merge = "application/merge-patch+json"

    def netpol(spec):
        return step("POST", ns + "networkpolicies", {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np"}, "spec": {"podSelector": {}, **spec}})

    def ingress(spec):
        return step("POST", ns + "ingresses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ing"}, "spec": spec})

    def paths(*items):
        return {"rules": [{"host": "a.example.com", "http": {"paths": list(items)}}]}

    backend = {"service": {"name": "s", "port": {"number": 80}}}
    template = {"spec": {"restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox"}]}}

    def job(spec):
        return step("POST", batch + "jobs", {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": template, **spec}})

    def labelled(labels, restart="Never", containers=None):
        return {"metadata": {"labels": labels} if labels is not None else {},
                "spec": {"restartPolicy": restart,
                         "containers": containers if containers is not None
                         else [{"name": "c", "image": "busybox"}]}}

    apps = "/apis/apps/v1/namespaces/$NS/"

    def workload(plural, kind, spec):
        return step("POST", apps + plural, {
            "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"selector": {"matchLabels": {"app": "w"}},
                     "template": labelled({"app": "w"}, restart="Always"), **spec}})

    def role(rules):
        return step("POST", rbac + "roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": rules})

    def binding(role_ref, subjects):
        return step("POST", rbac + "rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b"}, "roleRef": role_ref, "subjects": subjects})

    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
    user = {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}

    def endpoints(subsets):
        return step("POST", "/api/v1/namespaces/$NS/endpoints", {
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
            "subsets": subsets})

    return {
        "netpol-bad-protocol": [netpol({"ingress": [{"ports": [{"protocol": "TCPX", "port": 80}]}]})],
        "netpol-bad-cidr": [netpol({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]})],
        "netpol-except-outside-cidr": [netpol({"egress": [{"to": [{"ipBlock": {
            "cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]})],
        "netpol-bad-policy-type": [netpol({"policyTypes": ["Sideways"]})],
        "netpol-bad-selector-value": [netpol({"podSelector": {"matchLabels": {"app": "a b"}}})],
        "netpol-port-out-of-range": [netpol({"ingress": [{"ports": [{"port": 70000}]}]})],
        "netpol-valid": [netpol({"policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [
            {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
            {"namespaceSelector": {"matchLabels": {"team": "a"}}}],
            "ports": [{"protocol": "TCP", "port": "http"}]}]})],
        "ingress-no-path-type": [ingress(paths({"path": "/", "backend": backend}))],
        "ingress-prefix-not-absolute": [ingress(paths({"path": "api", "pathType": "Prefix",
                                                       "backend": backend}))],
        "ingress-bad-host": [ingress({"rules": [{"host": "Foo_Bar", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": backend}]}}]})],
        "ingress-backend-no-port": [ingress(paths({"path": "/", "pathType": "Prefix",
                                                   "backend": {"service": {"name": "s"}}}))],
        "ingress-no-backend-no-rules": [ingress({})],
        "ingress-valid": [ingress(paths({"path": "/api", "pathType": "Prefix", "backend": backend},
                                        {"path": "/x", "pathType": "Exact", "backend": backend}))],
        "job-restart-always": [step("POST", batch + "jobs", {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Always",
                                           "containers": [{"name": "c", "image": "x"}]}}}})],
        "job-negative-counts": [job({"parallelism": -1, "completions": -2, "backoffLimit": -3})],
        "job-valid": [job({"template": labelled({"app": "a"})})],
        "job-valid-no-labels": [job({})],
        "job-manual-no-selector": [job({"manualSelector": True,
                                         "template": labelled({"app": "a"})})],
        "job-manual-no-containers": [job({"manualSelector": True,
                                           "selector": {"matchLabels": {"app": "b"}},
                                           "template": labelled({"app": "a"}, containers=[])})],
        "job-foreign-selector": [job({"selector": {"matchLabels": {"app": "a"}},
                                      "template": labelled({"app": "a", "job-name": "other"})})],
        "job-selector-expressions": [job({"selector": {"matchExpressions": [
            {"key": "a", "operator": "In", "values": ["x"]}]}})],
        "job-restart-unknown": [job({"template": labelled(None, restart="Sometimes")})],
        "deployment-bad-policies": [workload("deployments", "Deployment", {
            "template": {"metadata": {"labels": {"app": "w"}},
                         "spec": {"restartPolicy": "Never", "dnsPolicy": "Weird",
                                  "containers": []}}})],
        "replicaset-valid": [workload("replicasets", "ReplicaSet", {})],
        "statefulset-valid": [workload("statefulsets", "StatefulSet", {"serviceName": "w"})],
        "statefulset-claims-on-delete": [workload("statefulsets", "StatefulSet", {
            "serviceName": "w", "updateStrategy": {"type": "OnDelete"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}]})],
        "daemonset-valid": [workload("daemonsets", "DaemonSet", {})],
        "daemonset-template-generation": [
            workload("daemonsets", "DaemonSet", {"updateStrategy": {"type": "OnDelete"}}),
            step("PATCH", apps + "daemonsets/w", {"spec": {"template": {"spec": {
                "terminationGracePeriodSeconds": 5}}}}, contentType=merge),
            step("PATCH", apps + "daemonsets/w", {"spec": {"revisionHistoryLimit": 3}},
                 contentType=merge),
            step("PATCH", apps + "daemonsets/w", {"metadata": {"annotations": {
                "deprecated.daemonset.template.generation": "9"}}}, contentType=merge)],
        "role-no-verbs": [role([{"apiGroups": [""], "resources": ["pods"]}])],
        "role-no-resources": [role([{"apiGroups": [""], "verbs": ["get"]}])],
        "binding-bad-ref-kind": [binding({**ref, "kind": "Thing"}, [user])],
        "binding-bad-subject-kind": [binding(ref, [{**user, "kind": "Robot"}])],
        "binding-sa-without-namespace": [binding(ref, [{"kind": "ServiceAccount", "name": "sa"}])],
        "binding-roleref-immutable": [
            binding(ref, [user]),
            step("PATCH", rbac + "rolebindings/b", {"roleRef": {**ref, "name": "other"}},
                 contentType=merge)],
        "endpoints-port-out-of-range": [endpoints([{"addresses": [{"ip": "10.0.0.1"}],
                                                    "ports": [{"port": 70000}]}])],
        "endpoints-valid": [endpoints([{"addresses": [{"ip": "10.0.0.1"}],
                                        "ports": [{"port": 80, "name": "http", "protocol": "TCP"}]}])],
    }


def families():
    """Scenario families in a fixed order: {family: [{"name", "steps"}]}."""
    groups = {
        "crud": {**crud(CONFIGMAP), **crud(SECRET), **crud(WIDGET), **crud(SERVICE),
                 **deletes()},
        "patch": patches(),
        "apply": ssa(),
        "status": status(),
        "finalizers": finalizers(),
        "gc": gc(),
        "namespaces": namespaces(),
        "selectors": selectors(),
        "paging": paging(),
        "watch": watches(),
        "errors": errors(),
        "schema": schema(),
        "validation": validation(),
        "kinds": kinds(),
    }
    groups.update(scenarios_rbac.families())

    def cleanup(family, name, steps):
        if family == "namespaces":
            return {"cleanup": ["/api/v1/namespaces/d-" + name + "-x"]}
        paths = scenarios_rbac.cleanup_of(steps)
        return {"cleanup": paths} if paths else {}

    return {family: [{"name": name, "steps": steps, **cleanup(family, name, steps)}
                     for name, steps in items.items()]
            for family, items in groups.items()}


if __name__ == "__main__":
    total = 0
    for family, items in families().items():
        print(family, len(items))
        total += len(items)
    print("total", total)
