"""The cross-language scenario through the Python binding: prints one JSON line of outcomes.
Usage: run_python.py SCENARIO ENDPOINT_URL ACCESS_KEY_ID SECRET_ACCESS_KEY"""

import json
import sys

import laneway
from laneway.openai import OpenAI


def openai_outcome(shaped, client):
    """An `openai`-shaped case through `laneway.openai.OpenAI`."""
    create = client.chat.completions.create if shaped["api"] == "chat" else client.responses.create
    try:
        answer = create(**shaped["body"])
        if shaped["body"].get("stream"):
            return {"openai_events": [event.model_dump() for event in answer]}
        return {"openai": answer.model_dump()}
    except laneway.LanewayError as e:
        return {"error": e.details}


def outcome(case, router, client):
    if "openai" in case:
        return openai_outcome(case["openai"], client)
    try:
        if case.get("stream"):
            response = None
            for ev in router.stream_sync(case["request"]):
                if ev.type == "completed":
                    response = ev.response
            d = response.to_dict()
        else:
            d = router.generate_sync(case["request"]).to_dict()
        return {"response": d}
    except laneway.LanewayError as e:
        return {"error": e.details}


def main():
    scenario, url, key, secret = sys.argv[1:5]
    with open(scenario) as f:
        s = json.load(f)
    router = laneway.Router(s["options"]["config"], endpoint_url=url, access_key_id=key, secret_access_key=secret)
    client = OpenAI(router=router)
    print(json.dumps([outcome(c, router, client) for c in s["cases"]]))


if __name__ == "__main__":
    main()
