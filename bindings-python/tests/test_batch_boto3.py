"""The official Python SDK (boto3) drives the emulator's batch flow: S3 upload, a model
invocation job, polling, outputs and manifest read back."""

import json
import time

import boto3
import pytest
from botocore.config import Config

from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY


def client(service, emulator):
    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=emulator.url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def test_boto3_runs_a_batch_job_against_the_emulator(emulator):
    s3 = client("s3", emulator)
    bedrock = client("bedrock", emulator)
    records = "".join(
        json.dumps(
            {
                "recordId": f"r{i:04}",
                "modelInput": {
                    "anthropic_version": "bedrock-2023-05-31",
                    "max_tokens": 16,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": f"note {i}"}]}],
                },
            }
        )
        + "\n"
        for i in range(120)
    )
    s3.put_object(Bucket="py-batch", Key="in/records.jsonl", Body=records.encode())
    arn = bedrock.create_model_invocation_job(
        jobName="from-boto3",
        roleArn="arn:aws:iam::123456789012:role/laneway-batch",
        modelId="anthropic.claude-haiku-4-5-20251001-v1:0",
        inputDataConfig={"s3InputDataConfig": {"s3Uri": "s3://py-batch/in/records.jsonl"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": "s3://py-batch/out/"}},
    )["jobArn"]
    deadline = time.monotonic() + 30
    while True:
        job = bedrock.get_model_invocation_job(jobIdentifier=arn)
        if job["status"] in ("Completed", "PartiallyCompleted", "Failed", "Stopped"):
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    assert job["status"] == "Completed", job.get("message")
    job_id = arn.rsplit("/", 1)[1]
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="py-batch", Prefix=f"out/{job_id}/")["Contents"])
    assert keys == [f"out/{job_id}/manifest.json.out", f"out/{job_id}/records.jsonl.out"]
    lines = [json.loads(l) for l in s3.get_object(Bucket="py-batch", Key=keys[1])["Body"].read().decode().splitlines()]
    assert [l["recordId"] for l in lines] == [f"r{i:04}" for i in range(120)]
    assert all(l["modelOutput"]["content"][0]["text"] for l in lines)
    manifest = json.loads(s3.get_object(Bucket="py-batch", Key=keys[0])["Body"].read())
    assert manifest["successRecordCount"] == 120 and manifest["errorRecordCount"] == 0


def test_boto3_sees_the_modelled_errors(emulator):
    bedrock = client("bedrock", emulator)
    with pytest.raises(bedrock.exceptions.ResourceNotFoundException):
        bedrock.get_model_invocation_job(jobIdentifier="nope")
    with pytest.raises(bedrock.exceptions.ValidationException):
        bedrock.create_model_invocation_job(
            jobName="bad",
            roleArn="not-a-role",
            modelId="amazon.nova-lite-v1:0",
            inputDataConfig={"s3InputDataConfig": {"s3Uri": "s3://b/in.jsonl"}},
            outputDataConfig={"s3OutputDataConfig": {"s3Uri": "s3://b/out/"}},
        )
