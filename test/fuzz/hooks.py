"""Schemathesis hooks of test/fuzz/openapi-fuzz.test.ts (loaded through SCHEMATHESIS_HOOKS).

- Valid data for the document's `format: vin` (core/domain/vin.ts): the pattern gives the form, the
  format the North American check digit, which no pattern states.
- A deserializer for the two binary responses (a JPEG, a PDF), which the document describes by their
  media type alone, so that schemathesis reads them instead of warning that it cannot.
- Outside the stateful phase, real ids in the paths of retrievals and a capture link of its own for
  each capture case (asking for every angle), so they get past "no such object"; the stateful phase
  has only the links.
- `refused_only_by_state`: where schemathesis.toml lets a positive case be answered with a refusal
  (400, 410, 422), the refusal must be one that depends on what exists, not on the request's form,
  and that the document says in words: an unknown list cursor, a review naming findings or photos
  that are not the report's, a baseline_inspection that is not a completed inspection of the same
  vehicle, a capture link no longer active, an Idempotency-Key used before.
- `reached_by_links`: every operation that takes an identifier was reached in the stateful phase,
  through the links alone (with FUZZ_REACHED, over the test's stateful passes together).
"""

import os
import re

import requests
import schemathesis
from schemathesis.core.parameters import ParameterLocation
from hypothesis import strategies as st

VIN_ALPHABET = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
TRANSLITERATION = dict(zip("ABCDEFGHJKLMNPRSTUVWXYZ", [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 7, 9, 2, 3, 4, 5, 6, 7, 8, 9]))
WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]


def with_check_digit(vin: str) -> str:
    """A North American VIN (first character 1-5) gets the check digit its other characters call for."""
    if vin[0] not in "12345":
        return vin
    total = sum((int(c) if c.isdigit() else TRANSLITERATION[c]) * w for c, w in zip(vin, WEIGHTS))
    digit = "X" if total % 11 == 10 else str(total % 11)
    return vin[:8] + digit + vin[9:]


@st.composite
def vins(draw):
    vin = with_check_digit(draw(st.text(alphabet=VIN_ALPHABET, min_size=17, max_size=17)))
    # The document's pattern allows either case and spaces around it: exercise both.
    vin = "".join(c.lower() if draw(st.booleans()) else c for c in vin)
    return " " * draw(st.integers(0, 2)) + vin + " " * draw(st.integers(0, 2))


schemathesis.openapi.format("vin", vins())


@schemathesis.deserializer("image/jpeg", "application/pdf")
def binary(ctx, response):
    # The document gives these bodies no schema but their media type, which the response's own
    # Content-Type is checked against; there is no structure to hand over.
    return None


_angles: list = []


def all_angles() -> list:
    """Every angle a capture step may ask for, as the document lists them."""
    if not _angles:
        doc = requests.get(f"{os.environ['FUZZ_URL']}/v1/openapi.json", timeout=10).json()
        params = doc["paths"]["/capture/v1/{token}/photos/{angle}"]["put"]["parameters"]
        _angles.extend(next(p for p in params if p["name"] == "angle")["schema"]["enum"])
    return _angles


def fresh_token() -> str:
    """The capture token of a new inspection, made with the test's key, asking for every angle (the
    front required), so that an upload of any angle the document allows is one its steps ask for."""
    steps = [{"angle": a, "required": a == "front"} for a in all_angles()]
    made = requests.post(
        f"{os.environ['FUZZ_URL']}/v1/inspections",
        json={"vehicle": {"vin": "1HGCM82633A004352"}, "reference": "fuzz", "capture": {"steps": steps}},
        headers={"Authorization": f"Bearer {os.environ['FUZZ_KEY']}"},
        timeout=10,
    )
    made.raise_for_status()
    return made.json()["capture_token"]


# Outside the stateful phase: by operationId, the environment variable naming a real id for the path.
REAL_IDS = {
    "retrieveInspection": "FUZZ_INSPECTION_ID",
    "retrieveReport": "FUZZ_COMPLETED_ID",
    "retrieveReportPdf": "FUZZ_COMPLETED_ID",
    "reviewInspection": "FUZZ_COMPLETED_ID",
    "retrieveMedia": "FUZZ_MEDIA_ID",
    "retrieveEvent": "FUZZ_EVENT_ID",
    "resendEvent": "FUZZ_EVENT_ID",
}


@schemathesis.hook
def before_call(context, case, kwargs):
    # A generated baseline_inspection names no inspection (nearly every create would be refused for
    # what exists, and the stateful phase would have few inspections to follow): a positive case
    # names the completed one, of its vehicle, so creates with a baseline are made and tested too.
    if (
        case.operation.definition.raw.get("operationId") == "createInspection"
        and isinstance(case.body, dict)
        and "baseline_inspection" in case.body
        and (case.meta is None or case.meta.generation.mode.is_positive)
    ):
        case.body["baseline_inspection"] = os.environ["FUZZ_COMPLETED_ID"]
        if isinstance(case.body.get("vehicle"), dict):
            case.body["vehicle"]["vin"] = "1HGCM82633A004352"
    # The stateful phase gets its identifiers from the document's links alone.
    if case.meta is None or case.meta.phase.name == "stateful" or not case.path_parameters:
        return
    path = case.meta.components.get(ParameterLocation.PATH)
    if path is not None and not path.mode.is_positive:
        return
    name = REAL_IDS.get(case.operation.definition.raw.get("operationId"))
    if name and "id" in case.path_parameters:
        case.path_parameters["id"] = os.environ[name]
    # Each capture case gets a link of its own: one submitted case would leave the rest of the run
    # answered 410, and the uploads, VIN and submit untested past it.
    if "token" in case.path_parameters:
        case.path_parameters["token"] = fresh_token()


# By operationId: the refusals a positive case may meet, as (status, error code, param pattern).
STATE_REFUSALS = {
    "listInspections": [(400, "parameter_invalid", r"cursor")],
    "listEvents": [(400, "parameter_invalid", r"cursor")],
    "reviewInspection": [(400, "parameter_invalid", r"decisions\[\d+\]\.(finding|type)|added\[\d+\]\.media_id")],
    "createInspection": [(400, "parameter_invalid", r"baseline_inspection")],
}
CAPTURE_INACTIVE = (410, "capture_link_inactive", r".*")
KEY_REUSED = (422, "idempotency_key_reused", r"Idempotency-Key")


@schemathesis.check
def refused_only_by_state(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code not in (400, 410, 422):
        return None
    operation = case.operation
    allowed = list(STATE_REFUSALS.get(operation.definition.raw.get("operationId"), []))
    if operation.path.startswith("/capture/"):
        allowed.append(CAPTURE_INACTIVE)
    if operation.method.upper() == "POST" and operation.path.startswith("/v1/"):
        allowed.append(KEY_REUSED)
    try:
        error = response.json()["error"]
    except Exception:
        raise AssertionError(f"{response.status_code} without the contract's error body") from None
    for status, code, param in allowed:
        if response.status_code == status and error["code"] == code and re.fullmatch(param, error["param"] or ""):
            return None
    raise AssertionError(
        f"Valid data refused: {response.status_code} {error['code']} (param {error['param']!r}): {error['message']}"
    )


@schemathesis.check
class reached_by_links:
    """Every operation that takes an identifier in its path was reached in the stateful phase, where
    only the document's links (no inferred ones, schemathesis.toml) carry identifiers from one
    response to the next request: answered anything but 404.

    With FUZZ_REACHED naming a file, the run adds what it reached to the file instead, and the test
    judges: openapi-fuzz.test.ts gives a seed's run further stateful passes (the seeds after it)
    while something is unreached, so a link that one pass's random walk seldom takes is still
    followed, and one that cannot be followed stays unreached in every pass."""

    def __init__(self):
        self.expected = set()
        self.reached = set()

    def after_response(self, ctx, response, case):
        if not self.expected:
            paths = case.operation.schema.raw_schema["paths"]
            self.expected = {f"{method.upper()} {path}" for path, ops in paths.items() if "{" in path for method in ops}
        if case.meta is not None and case.meta.phase.name == "stateful" and response.status_code != 404:
            self.reached.add(case.operation.label)

    def after_run(self, ctx):
        shared = os.environ.get("FUZZ_REACHED")
        if shared:
            with open(shared, "a", encoding="utf-8") as file:
                file.writelines(f"{label}\n" for label in sorted(self.reached))
            return
        unreached = sorted(self.expected - self.reached)
        if unreached:
            raise AssertionError("Not reached by following the document's links: " + ", ".join(unreached))
