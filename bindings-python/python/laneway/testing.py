"""Start the loopback emulator of Bedrock and SageMaker for tests and examples.

    with laneway.testing.Emulator(scenario="fast") as emu:
        router = laneway.Router(**emu.router_kwargs())

The emulator is the `laneway-emulator` binary (`cargo build -p laneway-emulator`): found through
`$LANEWAY_EMULATOR`, then on `PATH`, then in the checkout's `target/{debug,release}`; run from a
checkout without one, it is built with cargo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

ACCESS_KEY_ID = "LANEWAYTESTKEY"
SECRET_ACCESS_KEY = "LANEWAYTESTSECRET"


def bedrock_api_key(access_key_id: str, secret_access_key: str, region: str, expires_s: int = 43200) -> str:
    """A short-term Bedrock API key: `CallWithBearerToken` presigned with SigV4 query auth."""
    import base64
    import datetime
    import hashlib
    import hmac
    import urllib.parse

    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{day}/{region}/bedrock/aws4_request"
    params = {
        "Action": "CallWithBearerToken",
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{access_key_id}/{scope}",
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": str(expires_s),
        "X-Amz-SignedHeaders": "host",
    }
    query = "&".join(f"{urllib.parse.quote(k, safe='')}={urllib.parse.quote(v, safe='')}" for k, v in sorted(params.items()))
    canonical = f"POST\n/\n{query}\nhost:bedrock.amazonaws.com\n\nhost\n{hashlib.sha256(b'').hexdigest()}"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = ("AWS4" + secret_access_key).encode()
    for part in (day, region, "bedrock", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    url = f"bedrock.amazonaws.com/?{query}&X-Amz-Signature={signature}&Version=1"
    return "bedrock-api-key-" + base64.b64encode(url.encode()).decode()


def find_binary() -> str:
    """The path of `laneway-emulator`, or FileNotFoundError saying how to build it."""
    env = os.environ.get("LANEWAY_EMULATOR")
    if env:
        return env
    found = shutil.which("laneway-emulator")
    if found:
        return found
    for parent in Path(__file__).resolve().parents:
        for profile in ("debug", "release"):
            candidate = parent / "target" / profile / "laneway-emulator"
            if candidate.is_file():
                return str(candidate)
    here = Path.cwd()
    for parent in [here, *here.parents]:
        for profile in ("debug", "release"):
            candidate = parent / "target" / profile / "laneway-emulator"
            if candidate.is_file():
                return str(candidate)
    # In a checkout of Laneway: build it.
    for parent in [here, *here.parents]:
        if (parent / "emulator" / "Cargo.toml").is_file() and shutil.which("cargo"):
            subprocess.run(["cargo", "build", "--quiet", "-p", "laneway-emulator"], cwd=parent, check=True)
            return str(parent / "target" / "debug" / "laneway-emulator")
    raise FileNotFoundError("laneway-emulator not found: build it with `cargo build -p laneway-emulator` or set LANEWAY_EMULATOR")


class Emulator:
    """A running emulator process on 127.0.0.1; a context manager that stops it on exit."""

    def __init__(self, scenario: str = "fast", time_scale: Optional[float] = None, binary: Optional[str] = None):
        args = [binary or find_binary(), "--scenario", scenario, "--port", "0"]
        if time_scale is not None:
            args += ["--time-scale", str(time_scale)]
        self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("http://"):
            err = self._proc.stderr.read() if self._proc.stderr else ""
            self._proc.kill()
            raise RuntimeError(f"the emulator did not start: {line} {err}")
        self.url: str = line

    def router_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments for `laneway.Router` pointing at this emulator."""
        return {"endpoint_url": self.url, "access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY}

    def bedrock_api_key(self, region: str = "us-east-1", expires_s: int = 43200) -> str:
        """A short-term Bedrock API key for the emulator's test credentials, made as AWS's
        token generators make one: a SigV4-presigned `CallWithBearerToken` URL, base64, after
        `bedrock-api-key-`. Pass it as `api_key` to an `openai` client pointed at
        `f"{emulator.url}/openai/v1"`."""
        return bedrock_api_key(ACCESS_KEY_ID, SECRET_ACCESS_KEY, region, expires_s)

    def add_fault(self, fault: Dict[str, Any]) -> None:
        """Injects a fault through the control API (see the emulator's README section)."""
        import json
        import urllib.request

        req = urllib.request.Request(self.url + "/__laneway/faults", data=json.dumps(fault).encode(), method="POST", headers={"content-type": "application/json"})
        urllib.request.urlopen(req).read()

    def clear_faults(self) -> None:
        """Removes every injected fault."""
        import urllib.request

        req = urllib.request.Request(self.url + "/__laneway/faults", method="DELETE")
        urllib.request.urlopen(req).read()

    def counters(self) -> Any:
        """Rows of what the emulator served: service, region, target, tier, operation, counter."""
        import json
        import urllib.request

        return json.loads(urllib.request.urlopen(self.url + "/__laneway/counters").read())["counters"]

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
