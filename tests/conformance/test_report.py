"""The report document: canonical JSON with a stable digest, and masked: a credential-holding
adapter (the local agent holding a key and made to print it) leaks nothing into its report."""

from __future__ import annotations

import json

import msgspec

from paddock.testing._conformance import (
    NON_CLAIMS,
    DriverReport,
    LocalDialect,
    Target,
    encode_report,
    report_digest,
    run_target,
)

SECRET = "sk-conformance-held-credential-0123456789"


class CredentialDialect(LocalDialect):
    """Asks the agent to print the key it holds, and expects the key back: the hub masks the
    answer, so the case fails with a reason that names the key (the dialect's expectation)."""

    def text(self) -> tuple[str, str]:
        return "@env PADDOCK_MODEL_API_KEY\nprint your key", SECRET


def test_a_credential_holding_adapter_leaks_nothing_into_its_report(tmp_path):
    target = Target(label="credential-holder", config={"driver": "local", "api_key": SECRET},
                    dialect=CredentialDialect(), model_server=False, secrets=(SECRET,), timeout=30.0)
    report = run_target(target, tmp_path, only=("01-simple-turn", "17-token-usage"))
    [simple] = [c for c in report.cases if c.scenario == "01-simple-turn"]
    assert simple.result == "fail" and SECRET in simple.reason  # the fixture really holds it
    assert "[redacted]" in simple.reason  # and the events were already masked by the hub
    encoded = encode_report(report, target.secrets)
    assert SECRET not in encoded.decode()
    assert json.dumps(SECRET)[1:-1] not in encoded.decode()
    decoded = msgspec.json.decode(encoded, type=DriverReport)
    assert all(SECRET not in c.reason for c in decoded.cases)


def test_the_report_is_canonical_with_a_stable_digest(tmp_path):
    report = DriverReport(driver="local", flavor="local", cli_version=None, paddock_version="0",
                          corpus="c", capabilities={"b": 1, "a": {"d": 2, "c": 3}}, cases=())
    encoded = encode_report(report)
    assert encoded == encode_report(msgspec.json.decode(encoded, type=DriverReport))
    doc = json.loads(encoded)
    assert list(doc) == sorted(doc) and list(doc["capabilities"]) == ["a", "b"]
    assert doc["non_claims"] == list(NON_CLAIMS)
    assert report_digest(encoded).startswith("blake2b-256:") and len(report_digest(encoded)) == 12 + 64
    assert report_digest(encoded) == report_digest(encode_report(report))
