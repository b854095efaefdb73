"""Authentication, impersonation, RBAC authorization, escalation prevention and reviews.

Each scenario starts with a ServiceAccount `sa` in `$NS` (step 0) and a token for it from
the TokenRequest API (step 1); `as: TOKEN` sends a step with that token instead of the
admin's (`as: ""` sends no credentials). Cluster-scoped objects are named after `$NS` and
deleted afterwards. A step that depends on a grant just made polls with `until`, because
kube-apiserver's authorizer reads RBAC objects through an informer cache."""

RBAC = "/apis/rbac.authorization.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"
GROUP = "diff.example.com"
TOKEN = "{{token:1}}"
SA = {"kind": "ServiceAccount", "name": "sa", "namespace": "$NS"}
SA_USER = "system:serviceaccount:$NS:sa"


def step(method, path, body=None, **extra):
    out = {"method": method, "path": path}
    if body is not None:
        out["body"] = body
    for key, value in extra.items():
        out["as" if key == "as_" else key] = value
    return out


def rule(verbs, resources=None, groups=("",), names=None, urls=None):
    out = {"verbs": list(verbs)}
    if urls:
        out["nonResourceURLs"] = list(urls)
        return out
    out["apiGroups"] = list(groups)
    out["resources"] = list(resources or [])
    if names:
        out["resourceNames"] = list(names)
    return out


def role(name, rules, ns="$NS", **extra):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name}, "rules": rules}
    return step("POST", RBAC + "/namespaces/" + ns + "/roles", body, **extra)


def cluster_role(name, rules=None, labels=None, aggregate=None, **extra):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}}
    if labels:
        body["metadata"]["labels"] = labels
    if rules is not None:
        body["rules"] = rules
    if aggregate:
        body["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    return step("POST", RBAC + "/clusterroles", body, **extra)


def binding(name, kind, role_name, subjects=None, ns="$NS", **extra):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
            "subjects": subjects if subjects is not None else [SA]}
    return step("POST", RBAC + "/namespaces/" + ns + "/rolebindings", body, **extra)


def cluster_binding(name, role_name, subjects=None, **extra):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role_name},
            "subjects": subjects if subjects is not None else [SA]}
    return step("POST", RBAC + "/clusterrolebindings", body, **extra)


def cm(name="a"):
    return step("POST", "/api/v1/namespaces/$NS/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                 "data": {"k": "v"}})


def widget(name="a"):
    return step("POST", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets",
                {"apiVersion": GROUP + "/v1", "kind": "Widget", "metadata": {"name": name},
                 "spec": {"size": 1}})


def cm_path(name="a", ns="$NS"):
    return "/api/v1/namespaces/" + ns + "/configmaps" + ("/" + name if name else "")


def as_sa(method, path, body=None, **extra):
    return step(method, path, body, as_=TOKEN, **extra)


def review(kind, spec, path=None, **extra):
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
    return step("POST", path or AUTHZ + "/" + kind.lower() + "s", body, **extra)


def ready(verb, resource, group="", ns="$NS"):
    """Waits until the account's new grant reached the authorizer (its review says why)."""
    return review("SelfSubjectAccessReview",
                  {"resourceAttributes": attrs(verb, resource, ns, group)},
                  as_=TOKEN, untilPath="/status/reason")


def attrs(verb, resource, ns="$NS", group="", name=None, sub=None):
    out = {"namespace": ns, "verb": verb, "group": group, "resource": resource}
    if name:
        out["name"] = name
    if sub:
        out["subresource"] = sub
    return out


PRELUDE = [
    step("POST", "/api/v1/namespaces/$NS/serviceaccounts",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
    step("POST", "/api/v1/namespaces/$NS/serviceaccounts/sa/token",
         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
]


def token_request(name="sa", **spec):
    return step("POST", "/api/v1/namespaces/$NS/serviceaccounts/" + name + "/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})


def authentication():
    return {
        "authn-token-request": [],
        "authn-token-request-expiration": [token_request(expirationSeconds=7200)],
        "authn-token-request-too-short": [token_request(expirationSeconds=60)],
        "authn-token-request-missing-account": [token_request("nobody")],
        "authn-anonymous-healthz": [step("GET", "/healthz", as_="")],
        "authn-anonymous-discovery": [step("GET", "/api", as_="")],
        "authn-anonymous-list": [step("GET", cm_path(None), as_="")],
        "authn-bogus-token": [step("GET", cm_path(None), as_="not-a-token")],
        "authn-bogus-jwt": [step("GET", cm_path(None),
                                 as_="eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl")],
        "authn-sa-token-no-grant": [as_sa("GET", cm_path(None))],
        "authn-sa-healthz": [as_sa("GET", "/healthz")],
        "authn-sa-metrics-denied": [as_sa("GET", "/metrics")],
        "authn-other-audience": [token_request(audiences=["elsewhere"]),
                                 step("GET", cm_path(None), as_="{{token:2}}")],
        "authn-account-deleted": [step("DELETE", "/api/v1/namespaces/$NS/serviceaccounts/sa"),
                                  as_sa("GET", cm_path(None), until=401)],
        "authn-account-recreated": [
            step("DELETE", "/api/v1/namespaces/$NS/serviceaccounts/sa"),
            PRELUDE[0],
            as_sa("GET", cm_path(None), until=401)],
        "authn-legacy-secret-token": [
            step("POST", "/api/v1/namespaces/$NS/secrets",
                 {"apiVersion": "v1", "kind": "Secret", "metadata": {
                     "name": "sa-token", "annotations": {"kubernetes.io/service-account.name": "sa"}},
                  "type": "kubernetes.io/service-account-token"}),
            step("GET", "/api/v1/namespaces/$NS/secrets/sa-token", untilPath="/data/token"),
            step("GET", cm_path(None), as_="{{token:3}}")],
        "authn-legacy-secret-deleted": [
            step("POST", "/api/v1/namespaces/$NS/secrets",
                 {"apiVersion": "v1", "kind": "Secret", "metadata": {
                     "name": "sa-token", "annotations": {"kubernetes.io/service-account.name": "sa"}},
                  "type": "kubernetes.io/service-account-token"}),
            step("GET", "/api/v1/namespaces/$NS/secrets/sa-token", untilPath="/data/token"),
            step("DELETE", "/api/v1/namespaces/$NS/secrets/sa-token"),
            step("GET", cm_path(None), as_="{{token:3}}", until=401)],
    }


def impersonation():
    user = {"Impersonate-User": "bob"}
    return {
        "imp-admin-as-user": [step("GET", cm_path(None), headers=user)],
        "imp-admin-as-account": [step("GET", cm_path(None),
                                      headers={"Impersonate-User": SA_USER})],
        "imp-admin-as-masters": [step("GET", cm_path("nope"),
                                      headers={**user, "Impersonate-Group": "system:masters"})],
        "imp-group-without-user": [step("GET", cm_path(None),
                                        headers={"Impersonate-Group": "system:masters"})],
        "imp-account-may-not": [as_sa("GET", cm_path(None), headers=user)],
        "imp-account-allowed-user": [
            cluster_role("$NS-imp", [rule(["impersonate"], ["users"], names=["bob"])]),
            cluster_binding("$NS-imp", "$NS-imp"),
            as_sa("GET", cm_path(None), headers=user, until=403),
            as_sa("GET", cm_path(None), headers={"Impersonate-User": "alice"}),
            as_sa("GET", cm_path(None), headers={**user, "Impersonate-Group": "team"}),
            as_sa("GET", cm_path(None), headers={**user, "Impersonate-Extra-Scopes": "view"})],
        "imp-account-allowed-groups": [
            cluster_role("$NS-imp", [rule(["impersonate"], ["users", "groups"])]),
            cluster_binding("$NS-imp", "$NS-imp"),
            as_sa("GET", cm_path("nope"),
                  headers={**user, "Impersonate-Group": "system:masters"}, until=404)],
        "imp-as-granted-account": [
            role("get-cm", [rule(["get"], ["configmaps"])]),
            binding("get-cm", "Role", "get-cm"),
            cm(),
            step("GET", cm_path(), headers={"Impersonate-User": SA_USER}, until=200)],
    }


def authorization():
    read = [rule(["get"], ["configmaps"])]
    return {
        "rbac-role-get": [role("r", read), binding("b", "Role", "r"), cm(),
                          as_sa("GET", cm_path(), until=200), as_sa("DELETE", cm_path()),
                          as_sa("GET", cm_path(None))],
        "rbac-role-list-not-watch": [
            role("r", [rule(["list"], ["widgets"], groups=[GROUP])]), binding("b", "Role", "r"),
            widget(),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets", until=200),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets?watch=true&timeoutSeconds=1")],
        "rbac-role-watch": [
            role("r", [rule(["watch"], ["widgets"], groups=[GROUP])]), binding("b", "Role", "r"),
            widget(),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets?watch=true&timeoutSeconds=1",
                  until=200, watch=True)],
        "rbac-resource-names": [
            role("r", [rule(["get", "list"], ["configmaps"], names=["a"])]),
            binding("b", "Role", "r"), cm("a"), cm("b"),
            as_sa("GET", cm_path("a"), until=200), as_sa("GET", cm_path("b")),
            as_sa("GET", cm_path(None))],
        "rbac-resource-names-field-selector": [
            role("r", [rule(["list"], ["widgets"], groups=[GROUP], names=["a"])]),
            binding("b", "Role", "r"), widget("a"),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets?fieldSelector=metadata.name%3Da",
                  until=200),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets?fieldSelector=metadata.name%3Db")],
        "rbac-subresource": [
            role("r", [rule(["get"], ["widgets/status"], groups=[GROUP])]),
            binding("b", "Role", "r"), widget(),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a/status", until=200),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a")],
        "rbac-star-subresource": [
            role("r", [rule(["get"], ["*/status"], groups=[GROUP])]),
            binding("b", "Role", "r"), widget(),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a/status", until=200),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a")],
        # An apply that creates is also a create of that name (patch alone is not enough, and
        # resourceNames limit it); a POST create carries no name, so they never allow it.
        "rbac-apply-create-needs-create": [
            role("r", [rule(["patch"], ["configmaps"]),
                       rule(["create"], ["configmaps"], names=["a"])]),
            binding("b", "Role", "r"), ready("patch", "configmaps"),
            as_sa("PATCH", cm_path("b") + "?fieldManager=m",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
                  contentType="application/apply-patch+yaml"),
            as_sa("PATCH", cm_path("a") + "?fieldManager=m",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
                  contentType="application/apply-patch+yaml", until=201),
            as_sa("POST", cm_path(None),
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})],
        "rbac-group-mismatch": [
            role("r", [rule(["get"], ["configmaps"], groups=["apps"])]),
            binding("b", "Role", "r"), cm(), as_sa("GET", cm_path())],
        "rbac-star-everything": [
            role("r", [rule(["*"], ["*"], groups=["*"])]), binding("b", "Role", "r"), cm(),
            as_sa("DELETE", cm_path(), until=200), as_sa("GET", cm_path("a", "default"))],
        "rbac-clusterrole-in-rolebinding": [
            cluster_role("$NS-read", read), binding("b", "ClusterRole", "$NS-read"), cm(),
            as_sa("GET", cm_path(), until=200),
            as_sa("GET", cm_path("kube-root-ca.crt", "kube-system"))],
        "rbac-clusterrolebinding": [
            cluster_role("$NS-read", [rule(["get"], ["namespaces"])]),
            cluster_binding("$NS-read", "$NS-read"),
            as_sa("GET", "/api/v1/namespaces/kube-public", until=200),
            as_sa("GET", "/api/v1/namespaces")],
        "rbac-group-subject": [
            role("r", read),
            binding("b", "Role", "r", [{"kind": "Group", "name": "system:serviceaccounts:$NS",
                                        "apiGroup": "rbac.authorization.k8s.io"}]),
            cm(), as_sa("GET", cm_path(), until=200)],
        "rbac-user-subject": [
            role("r", read),
            binding("b", "Role", "r", [{"kind": "User", "name": SA_USER,
                                        "apiGroup": "rbac.authorization.k8s.io"}]),
            cm(), as_sa("GET", cm_path(), until=200)],
        "rbac-account-other-namespace": [
            role("r", read),
            binding("b", "Role", "r", [{"kind": "ServiceAccount", "name": "sa",
                                        "namespace": "elsewhere"}]),
            cm(), as_sa("GET", cm_path())],
        "rbac-missing-role": [
            binding("b", "Role", "nope"), cm(),
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")},
                   as_=TOKEN, untilPath="/status/reason"),
            as_sa("GET", cm_path())],
        "rbac-missing-clusterrole": [
            binding("b", "ClusterRole", "$NS-nope"), cm(),
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")},
                   as_=TOKEN, untilPath="/status/reason"),
            as_sa("GET", cm_path())],
        "rbac-namespace-get": [
            cluster_role("$NS-ns", [rule(["get"], ["namespaces"])]),
            binding("b", "ClusterRole", "$NS-ns"),
            as_sa("GET", "/api/v1/namespaces/$NS", until=200),
            as_sa("GET", "/api/v1/namespaces/default")],
        "rbac-denied-verbs": [
            cm(), as_sa("POST", cm_path(None), {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "b"}}),
            as_sa("PUT", cm_path(), {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "a"}}),
            as_sa("PATCH", cm_path(), {"data": {"x": "y"}},
                  contentType="application/merge-patch+json"),
            as_sa("DELETE", cm_path(None)),
            as_sa("GET", "/api/v1/configmaps"),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a/status")],
        "rbac-nonresource-url": [
            cluster_role("$NS-urls", [rule(["get"], urls=["/version/*"])]),
            cluster_binding("$NS-urls", "$NS-urls"),
            review("SelfSubjectAccessReview",
                   {"nonResourceAttributes": {"path": "/version/x", "verb": "get"}},
                   as_=TOKEN, untilPath="/status/reason"),
            as_sa("GET", "/metrics")],
        "rbac-default-view": [
            binding("b", "ClusterRole", "view"), cm(),
            as_sa("GET", cm_path(), until=200),
            as_sa("GET", "/api/v1/namespaces/$NS/secrets/x"),
            as_sa("DELETE", cm_path())],
        "rbac-default-edit": [
            binding("b", "ClusterRole", "edit"),
            as_sa("POST", cm_path(None), {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "b"}}, until=201),
            as_sa("GET", RBAC + "/namespaces/$NS/roles")],
        "rbac-default-admin": [
            binding("b", "ClusterRole", "admin"),
            as_sa("GET", RBAC + "/namespaces/$NS/roles", until=200),
            role("mine", read, as_=TOKEN),
            role("theirs", [rule(["get"], ["nodes"])], as_=TOKEN)],
        "rbac-cluster-admin-in-namespace": [
            binding("b", "ClusterRole", "cluster-admin"), cm(),
            as_sa("DELETE", cm_path(), until=200),
            as_sa("GET", "/api/v1/namespaces/default/configmaps/x")],
    }


def aggregation():
    part = [rule(["get"], ["configmaps"])]
    more = [rule(["list"], ["configmaps"]), rule(["get"], ["configmaps"])]
    return {
        "agg-fills-rules": [
            cluster_role("$NS-agg", aggregate={"d-agg": "$NS"}),
            cluster_role("$NS-part", part, labels={"d-agg": "$NS"}),
            step("GET", RBAC + "/clusterroles/$NS-agg", untilPath="/rules/0")],
        "agg-merges-in-name-order": [
            cluster_role("$NS-agg", aggregate={"d-agg": "$NS"}),
            cluster_role("$NS-z", part, labels={"d-agg": "$NS"}),
            cluster_role("$NS-a", more, labels={"d-agg": "$NS"}),
            step("GET", RBAC + "/clusterroles/$NS-agg", untilPath="/rules/1")],
        "agg-grants": [
            cluster_role("$NS-agg", aggregate={"d-agg": "$NS"}),
            cluster_role("$NS-part", part, labels={"d-agg": "$NS"}),
            binding("b", "ClusterRole", "$NS-agg"), cm(),
            as_sa("GET", cm_path(), until=200)],
        "agg-into-view": [
            cluster_role("$NS-view-widgets", [rule(["get"], ["widgets"], groups=[GROUP])],
                         labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
            binding("b", "ClusterRole", "view"), widget(),
            as_sa("GET", "/apis/" + GROUP + "/v1/namespaces/$NS/widgets/a", until=200)],
    }


def escalation():
    writer = [rule(["create", "update"], ["roles", "rolebindings"],
                   groups=["rbac.authorization.k8s.io"])]
    read = [rule(["get"], ["configmaps"])]
    secrets = [rule(["get"], ["secrets"])]
    rb_body = lambda name, kind, ref: {  # noqa: E731
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name}, "subjects": [SA],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": ref}}
    grant = [role("writer", writer + read), binding("writer", "Role", "writer")]
    settled = as_sa("GET", cm_path("nope"), until=404)
    return {
        "esc-role-not-held": grant + [settled, role("grab", secrets + read, as_=TOKEN)],
        "esc-role-held": grant + [settled, role("copy", read, as_=TOKEN)],
        "esc-role-with-names-held": grant + [
            settled, role("copy", [rule(["get"], ["configmaps"], names=["a"])], as_=TOKEN)],
        "esc-role-update": grant + [
            settled, role("copy", read, as_=TOKEN),
            as_sa("PUT", RBAC + "/namespaces/$NS/roles/copy",
                  {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "copy"}, "rules": read + secrets})],
        "esc-escalate-verb": [
            role("writer", writer + [rule(["escalate"], ["roles"],
                                          groups=["rbac.authorization.k8s.io"])]),
            binding("writer", "Role", "writer"),
            ready("escalate", "roles", "rbac.authorization.k8s.io"),
            role("grab", secrets, as_=TOKEN)],
        "esc-bind-not-held": grant + [
            settled, role("secrets", secrets),
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("grab", "Role", "secrets"))],
        "esc-bind-held": grant + [
            settled, role("reader", read),
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("mine", "Role", "reader"))],
        "esc-bind-verb": [
            role("writer", writer + [rule(["bind"], ["roles"],
                                          groups=["rbac.authorization.k8s.io"],
                                          names=["secrets"])]),
            binding("writer", "Role", "writer"), role("secrets", secrets), role("other", secrets),
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("grab", "Role", "secrets"), until=201),
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("grab2", "Role", "other"))],
        "esc-bind-missing-role": grant + [
            settled,
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("ghost", "Role", "ghost"))],
        "esc-bind-clusterrole": grant + [
            settled,
            as_sa("POST", RBAC + "/namespaces/$NS/rolebindings",
                  rb_body("view", "ClusterRole", "view"))],
        "esc-aggregation-rule": [
            cluster_role("$NS-writer", [rule(["create"], ["clusterroles"],
                                             groups=["rbac.authorization.k8s.io"])]),
            cluster_binding("$NS-writer", "$NS-writer"),
            ready("create", "clusterroles", "rbac.authorization.k8s.io", ""),
            cluster_role("$NS-agg", aggregate={"d-agg": "$NS"}, as_=TOKEN),
            cluster_role("$NS-empty", [], as_=TOKEN)],
        "esc-clusterrolebinding": [
            cluster_role("$NS-writer", [rule(["create"], ["clusterrolebindings"],
                                             groups=["rbac.authorization.k8s.io"])]),
            cluster_binding("$NS-writer", "$NS-writer"),
            ready("create", "clusterrolebindings", "rbac.authorization.k8s.io", ""),
            cluster_binding("$NS-grab", "cluster-admin", as_=TOKEN)],
    }


def reviews():
    read = [rule(["get"], ["configmaps"])]
    return {
        "review-self-allowed": [
            role("r", read), binding("b", "Role", "r"),
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")},
                   as_=TOKEN, untilPath="/status/reason")],
        "review-self-denied": [
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("delete", "configmaps")},
                   as_=TOKEN)],
        "review-self-admin": [
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("delete", "nodes", "")})],
        "review-self-non-resource": [
            review("SelfSubjectAccessReview",
                   {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}, as_=TOKEN),
            review("SelfSubjectAccessReview",
                   {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}, as_=TOKEN)],
        "review-self-missing-role": [
            binding("b", "Role", "ghost"),
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")},
                   as_=TOKEN, untilPath="/status/reason")],
        "review-self-empty": [review("SelfSubjectAccessReview", {}, as_=TOKEN)],
        "review-self-impersonated": [
            review("SelfSubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")},
                   headers={"Impersonate-User": "bob"})],
        "review-rules": [
            role("r", read + [rule(["list"], ["widgets"], groups=[GROUP], names=["a"])]),
            binding("b", "Role", "r"),
            review("SelfSubjectRulesReview", {"namespace": "$NS"}, as_=TOKEN,
                   untilPath="/status/resourceRules/2")],
        "review-rules-no-namespace": [review("SelfSubjectRulesReview", {}, as_=TOKEN)],
        "review-subject": [
            role("r", read), binding("b", "Role", "r"),
            review("SubjectAccessReview", {"user": SA_USER, "groups": ["system:serviceaccounts"],
                                           "resourceAttributes": attrs("get", "configmaps")},
                   untilPath="/status/reason"),
            review("SubjectAccessReview", {"user": "bob",
                                           "resourceAttributes": attrs("get", "configmaps")}),
            review("SubjectAccessReview", {"groups": ["system:masters"],
                                           "resourceAttributes": attrs("get", "configmaps")})],
        "review-subject-no-user": [
            review("SubjectAccessReview", {"resourceAttributes": attrs("get", "configmaps")})],
        "review-subject-by-account": [
            review("SubjectAccessReview", {"user": "bob",
                                           "resourceAttributes": attrs("get", "configmaps")},
                   as_=TOKEN)],
        "review-local": [
            review("LocalSubjectAccessReview", {"user": "bob",
                                                "resourceAttributes": attrs("get", "configmaps")},
                   path=AUTHZ + "/namespaces/$NS/localsubjectaccessreviews"),
            review("LocalSubjectAccessReview", {"user": "bob",
                                                "resourceAttributes": attrs("get", "configmaps",
                                                                            "default")},
                   path=AUTHZ + "/namespaces/$NS/localsubjectaccessreviews")],
    }


def cleanup_of(steps):
    """Delete the cluster-scoped objects a scenario's steps create."""
    out = []
    for s in steps:
        if s["method"] == "POST" and s["path"] in (RBAC + "/clusterroles",
                                                  RBAC + "/clusterrolebindings"):
            out.append(s["path"] + "/" + s["body"]["metadata"]["name"])
    return out


def families():
    """{family: {name: steps}} with the prelude prepended."""
    out = {}
    for family, items in (("authn", {**authentication(), **impersonation()}),
                          ("rbac", {**authorization(), **aggregation()}),
                          ("escalation", {**escalation(), **reviews()})):
        out[family] = {name: PRELUDE + steps for name, steps in items.items()}
    return out
