"""A scripted JSON-RPC peer over stdio for transport tests. Leaves out "jsonrpc" like Codex.

Methods: ``echo`` -> result = params; ``fail`` -> error -32000; ``crash`` -> writes a line to
stderr and exits with code 3 without answering; ``garbage`` -> writes malformed and over-long
lines, then answers; ``ask`` -> sends a request ``host/question`` and a notification
``note``, and answers with the host's answer; ``slow`` -> never answers; ``spam`` -> sends
params.count notifications in one write."""

import json
import sys


def send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    sys.stderr.write("peer ready\n")
    sys.stderr.flush()
    pending_ask = None
    for raw in sys.stdin:
        msg = json.loads(raw)
        method = msg.get("method")
        if method is None:  # a response from the host
            if pending_ask is not None and msg.get("id") == "q1":
                send({"id": pending_ask, "result": {"answer": msg.get("result"), "error": msg.get("error")}})
                pending_ask = None
            continue
        rid = msg.get("id")
        params = msg.get("params")
        if method == "echo":
            send({"id": rid, "result": params})
        elif method == "fail":
            send({"id": rid, "error": {"code": -32000, "message": "it failed"}})
        elif method == "crash":
            sys.stderr.write("fatal: the peer crashed on purpose\n")
            sys.stderr.flush()
            sys.exit(3)
        elif method == "garbage":
            sys.stdout.write("this is not json\n{\"half\": \n" + "x" * params["long"] + "\n[1,2]\n")
            sys.stdout.flush()
            send({"id": rid, "result": "after garbage"})
        elif method == "ask":
            pending_ask = rid
            send({"method": "note", "params": {"n": 1}})
            send({"id": "q1", "method": params.get("ask", "host/question"), "params": {"q": "?"}})
        elif method == "spam":
            sys.stdout.write("".join(json.dumps({"method": "tick", "params": {"i": i}}) + "\n" for i in range(params["count"])))
            sys.stdout.flush()
            send({"id": rid, "result": params["count"]})
        elif method == "slow":
            pass
        elif rid is not None:
            send({"id": rid, "error": {"code": -32601, "message": "unknown"}})


if __name__ == "__main__":
    main()
