"""The HTTP API through real HTTP, on the unix socket and on loopback TCP: every endpoint, auth,
SSE resume with Last-Event-ID, many SSE clients, malformed bodies, the OpenAPI document."""

from __future__ import annotations

import json
import stat
import threading

import httpx
import msgspec
import pytest

from paddock.contract import decode_event
from paddock.server import openapi_document

GETS = ["/health", "/openapi.json", "/v1/instances", "/v1/diagnose", "/v1/sessions", "/v1/threads",
        "/v1/requests", "/v1/has_session?thread_id=t1", "/v1/read_thread?thread_id=t1", "/v1/events"]
POSTS = ["start_session", "send_turn", "interrupt_turn", "steer_turn", "respond_to_request", "respond_to_user_input",
         "stop_session", "stop_all", "rollback_thread", "compact_events"]


def post(http: httpx.Client, operation: str, **body) -> httpx.Response:
    return http.post(f"/v1/{operation}", json=body)


def sse(response: httpx.Response | object, buf: bytes = b""):
    """(id, event) pairs of an SSE response (or of an iterator of its raw chunks, after ``buf``),
    parsed here independently of paddock.client."""
    chunks = response.iter_raw() if isinstance(response, httpx.Response) else response
    for chunk in chunks:
        buf += chunk
        *frames, buf = buf.split(b"\n\n")
        for frame in frames:
            fields = dict(line.split(b": ", 1) for line in frame.split(b"\n") if line and not line.startswith(b":"))
            if b"data" in fields:
                yield (int(fields[b"id"]) if b"id" in fields else None), decode_event(fields[b"data"])


def turn_events_in_log(http, thread_id, first_seq):
    """Every event of the thread from first_seq on, read back through a fresh replay."""
    with http.stream("GET", "/v1/events", params={"thread_id": thread_id, "from_seq": first_seq}) as r:
        out = []
        for seq, event in sse(r):
            out.append((seq, event))
            if event.type == "turn.completed":
                return out


def test_every_endpoint(server):
    ws = server.workspace
    with server.http() as http:
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["transport"] == server.transport
        assert [i["id"] for i in http.get("/v1/instances").json()] == ["local-a", "local-b"]
        assert [d["id"] for d in http.get("/v1/diagnose").json()] == ["local-a", "local-b"]
        assert http.get("/openapi.json").json() == json.loads(json.dumps(openapi_document()))
        r = post(http, "start_session", thread_id="t1", instance="local-a", cwd=str(ws), runtime_mode="approval-required")
        assert r.status_code == 200 and r.json()["status"] == "ready"
        assert http.get("/v1/has_session", params={"thread_id": "t1"}).json() is True
        assert [s["thread_id"] for s in http.get("/v1/sessions").json()] == ["t1"]
        assert [b["thread_id"] for b in http.get("/v1/threads").json()] == ["t1"]
        with http.stream("GET", "/v1/events", params={"thread_id": "t1"}) as stream:
            events = sse(stream)
            turn = post(http, "send_turn", thread_id="t1", text=f"@write {ws}/f.txt hi").json()
            opened = next(e for _, e in events if e.type == "request.opened")
            [pending] = http.get("/v1/requests").json()
            assert pending["request_id"] == opened.request_id and pending["type"] == "request.opened"
            assert post(http, "respond_to_request", thread_id="t1", request_id=opened.request_id,
                        decision="accept").status_code == 200
            done = next(e for _, e in events if e.type == "turn.completed")
            assert done.turn_id == turn["turn_id"] and (ws / "f.txt").read_text() == "hi"
            slow = post(http, "send_turn", thread_id="t1", text="@chunks 300\n@delay 0.02").json()
            assert post(http, "interrupt_turn", thread_id="t1", turn_id=slow["turn_id"]).status_code == 200
            assert next(e for _, e in events if e.type == "turn.completed").state == "interrupted"
            steered = post(http, "steer_turn", thread_id="t1", text="@reply steered").json()
            assert next(e for _, e in events if e.type == "turn.completed").turn_id == steered["turn_id"]
        snap = http.get("/v1/read_thread", params={"thread_id": "t1"}).json()
        assert [t["state"] for t in snap["turns"]] == ["completed", "interrupted", "completed"]
        assert post(http, "rollback_thread", thread_id="t1", num_turns=1).json()["error"]["code"] == "capability_unsupported"
        r = post(http, "respond_to_user_input", thread_id="t1", request_id="r", answers={"q": "a"})
        assert (r.status_code, r.json()["error"]["code"]) == (422, "capability_unsupported")
        assert post(http, "stop_session", thread_id="t1").status_code == 200
        assert http.get("/v1/has_session", params={"thread_id": "t1"}).json() is False
        assert post(http, "stop_all").status_code == 200
        assert post(http, "compact_events", before_seq=2).json() == 1
        r = post(http, "send_turn", thread_id="t1", text="again")
        assert (r.status_code, r.json()["error"]["code"], r.json()["error"]["type"]) == (409, "session_closed", "SessionClosedError")
        r = post(http, "send_turn", thread_id="ghost", text="hi")
        assert (r.status_code, r.json()["error"]["code"], r.json()["error"]["thread_id"]) == (404, "session_not_found", "ghost")
        r = post(http, "start_session", thread_id="t2", instance="nope", cwd=str(ws))
        assert (r.status_code, r.json()["error"]["code"]) == (404, "instance_not_found")
        r = http.get("/v1/nothing-here")
        assert (r.status_code, r.json()["error"]["code"]) == (404, "not_found")
        r = http.delete("/v1/instances")
        assert (r.status_code, r.json()["error"]["code"]) == (405, "method_not_allowed")
        assert http.get("/").headers["content-type"].startswith("text/html")


def test_state_files_are_private(make_server):
    unix = make_server("unix")
    tcp = make_server("tcp")
    for path in (unix.state / "paddock.sock", unix.state / "server.json", tcp.state / "server.token",
                 tcp.state / "server.json"):
        assert stat.S_IMODE(path.lstat().st_mode) == 0o600, path
    assert len(tcp.token) >= 40
    unix.stop(), tcp.stop()
    assert not (unix.state / "paddock.sock").exists() and not (tcp.state / "server.token").exists()


@pytest.mark.parametrize("token", [None, "wrong", "x" * 43])
def test_a_wrong_or_missing_token_gets_401_and_nothing_else(make_server, token):
    served = make_server("tcp")
    with served.http() as good:
        good.post("/v1/start_session", json={"thread_id": "secret-thread", "instance": "local-a", "cwd": str(served.workspace)})
    with served.http(token=token) as http:
        bodies = set()
        for path in GETS:
            r = http.get(path)
            assert r.status_code == 401, path
            assert r.headers["www-authenticate"] == 'Bearer realm="paddock"'
            bodies.add(r.content)
        for op in POSTS:
            r = http.post(f"/v1/{op}", json={"thread_id": "secret-thread", "text": "hi"})
            assert r.status_code == 401, op
            bodies.add(r.content)
        r = http.get("/v1/events", headers={"Authorization": f"Basic {served.token}"})
        bodies.add(r.content)
    # One fixed body for every route: no thread, instance, path or version leaks.
    [body] = bodies
    assert json.loads(body) == {"error": {"code": "unauthorized", "type": "HTTPError", "message": "a valid bearer token is required",
                                          "field": None, "thread_id": None, "instance_id": None, "driver": None, "attrs": {}}}


@pytest.mark.parametrize(
    ("operation", "body", "field", "needle"),
    [
        ("start_session", {"thread_id": "t", "instance": 5, "cwd": "/"}, "instance", "Expected `str`, got `int`"),
        ("start_session", {"thread_id": "t", "instance": "local-a"}, "cwd", "missing required field `cwd`"),
        ("start_session", {"thread_id": "t", "instance": "local-a", "cwd": "/", "runtime_mode": "yolo"}, "runtime_mode", "Invalid enum value 'yolo'"),
        ("send_turn", {"thread_id": "t", "txt": "hi"}, "txt", "unknown field `txt`"),
        ("respond_to_request", {"thread_id": "t", "request_id": "r", "decision": "maybe"}, "decision", "Invalid enum value"),
        ("rollback_thread", {"thread_id": "t", "num_turns": "two"}, "num_turns", "Expected `int`, got `str`"),
        ("respond_to_user_input", {"thread_id": "t", "request_id": "r", "answers": []}, "answers", "Expected `object`, got `array`"),
    ],
)
def test_a_malformed_body_gets_400_naming_the_field(server, operation, body, field, needle):
    with server.http() as http:
        r = http.post(f"/v1/{operation}", json=body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert (error["code"], error["type"], error["field"]) == ("validation", "ValidationError", field)
    assert needle in error["message"] and f"Invalid input to {operation}" in error["message"]


def test_bad_json_and_bad_queries_get_400(server):
    with server.http() as http:
        r = http.post("/v1/send_turn", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
        r = http.get("/v1/read_thread")
        assert (r.status_code, r.json()["error"]["field"]) == (400, "thread_id")
        r = http.get("/v1/events", params={"from_seq": "soon"})
        assert (r.status_code, r.json()["error"]["field"]) == (400, "from_seq")
        r = http.get("/v1/events", params={"type": "nope"})
        assert r.status_code == 400 and "unknown event types" in r.json()["error"]["message"]
        r = http.post("/v1/send_turn", content=b"x" * (2_000_000), headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "limit" in r.json()["error"]["message"]


def test_sse_disconnect_mid_turn_and_resume_with_last_event_id(server):
    ws = server.workspace
    with server.http() as http:
        post(http, "start_session", thread_id="t1", instance="local-a", cwd=str(ws))
        got: list[tuple[int, object]] = []
        with http.stream("GET", "/v1/events", params={"thread_id": "t1"}) as stream:
            events = sse(stream)
            turn = post(http, "send_turn", thread_id="t1", text="@chunks 400\n@delay 0.002").json()
            for seq, event in events:
                got.append((seq, event))
                if sum(1 for _, e in got if e.type == "content.delta") == 50:
                    break  # drop the connection mid-turn
        last = got[-1][0]
        with http.stream("GET", "/v1/events", params={"thread_id": "t1"}, headers={"Last-Event-ID": str(last)}) as stream:
            for seq, event in sse(stream):
                got.append((seq, event))
                if event.type == "turn.completed":
                    break
        assert got[-1][1].turn_id == turn["turn_id"]
        expected = turn_events_in_log(http, "t1", got[0][0])
    seqs = [s for s, _ in got]
    assert seqs == [s for s, _ in expected]  # every event, once, in order
    assert [e for _, e in got] == [e for _, e in expected]
    assert all(seq == event.seq for seq, event in got)
    assert sum(1 for _, e in got if e.type == "content.delta") == 400


def test_remote_subscription_survives_a_dropped_connection(server):
    from paddock.client import _shutdown

    rt = server.remote()
    try:
        rt.start_session("t1", instance="local-a", cwd=server.workspace)
        with rt.subscribe(thread_id="t1") as sub:
            rt.send_turn("t1", "@chunks 300\n@delay 0.002")
            got = [sub.get(timeout=10) for _ in range(40)]
            _shutdown(sub._response)  # the network drops the connection; the client resumes
            while got[-1].type != "turn.completed":
                got.append(sub.get(timeout=10))
                assert got[-1] is not None
        seqs = [e.seq for e in got]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    finally:
        rt.close()


@pytest.mark.timeout(120)
def test_50_sse_clients_on_one_busy_thread_each_get_every_event(server):
    ws = server.workspace
    with server.http() as http:
        post(http, "start_session", thread_id="busy", instance="local-a", cwd=str(ws))
    clients = [server.http() for _ in range(50)]
    streams = [c.stream("GET", "/v1/events", params={"thread_id": "busy"}) for c in clients]
    responses = [s.__enter__() for s in streams]
    received: list[list[int]] = [[] for _ in clients]
    try:
        iterators = []
        for r in responses:
            assert r.status_code == 200
            raw = r.iter_raw()
            first = next(raw)  # the opening comment: this stream is subscribed
            assert first.startswith(b": paddock events")
            iterators.append(sse(raw, first))

        def read(i: int) -> None:
            for seq, event in iterators[i]:
                received[i].append(seq)
                if event.type == "turn.completed":
                    return

        threads = [threading.Thread(target=read, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        with server.http() as http:
            post(http, "send_turn", thread_id="busy", text="@chunks 2000")
            for t in threads:
                t.join(90)
            expected = [s for s, _ in turn_events_in_log(http, "busy", received[0][0])]
    finally:
        for s in streams:
            s.__exit__(None, None, None)
        for c in clients:
            c.close()
    assert len(expected) > 2000
    for got in received:
        assert got == expected


def test_openapi_document_describes_every_route(server):
    with server.http() as http:
        doc = http.get("/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    paths = doc["paths"]
    for path in GETS:
        assert path.split("?")[0] in paths and "get" in paths[path.split("?")[0]], path
    for op in POSTS:
        spec = paths[f"/v1/{op}"]["post"]
        assert spec["operationId"] == op
        ref = spec["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert schema["type"] == "object" and schema.get("additionalProperties") is False
        for code in ("400", "404", "409", "504"):
            assert spec["responses"][code]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorDocument")
    assert set(doc["components"]["schemas"]["StartSessionBody"]["required"]) == {"thread_id", "instance", "cwd"}
    events = paths["/v1/events"]["get"]
    assert {p["name"] for p in events["parameters"]} >= {"thread_id", "from_seq", "Last-Event-ID", "type"}
    # every $ref resolves
    text = json.dumps(doc)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert ref in doc["components"]["schemas"], ref
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    msgspec.json.decode(json.dumps(doc).encode())  # plain JSON all the way down


def test_a_client_that_goes_away_ends_its_subscription(server):
    import time

    with server.http() as http:
        post(http, "start_session", thread_id="t1", instance="local-a", cwd=str(server.workspace))
        clients = [server.http() for _ in range(10)]
        streams = [c.stream("GET", "/v1/events", params={"thread_id": "t1"}) for c in clients]
        raws = [s.__enter__().iter_raw() for s in streams]  # keep each iterator: dropping one closes it
        for raw in raws:
            assert next(raw).startswith(b": paddock events")
        assert http.get("/health").json()["event_streams"] == 10
        post(http, "send_turn", thread_id="t1", text="@chunks 500\n@delay 0.005")
        for s, c in zip(streams, clients):  # leave mid-turn
            s.__exit__(None, None, None)
            c.close()
        deadline = time.monotonic() + 10
        while http.get("/health").json()["event_streams"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert http.get("/health").json()["event_streams"] == 0
