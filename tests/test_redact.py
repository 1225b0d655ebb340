"""A corpus of secret shapes that redaction must catch, and of log lines it must leave alone.

Each shape is checked three ways: `redact` (Python), `redact_expr` (polars, the
vectorised path every table output takes) and `redact_obj`; the two engines must give
the same text. Outputs that use them (query, export, renderers) are tested in
tests/test_report.py and tests/test_query.py.
"""

from __future__ import annotations

import polars as pl
import pytest

from loganalyze.redact import MARK, redact, redact_expr, redact_frame, redact_obj, secret_key

PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"  # 64 base64 characters

# (line, the secret in it): the secret must be gone, the rest of the line kept.
CORPUS = [
    ("--api-key PLANTa1", "PLANTa1"),
    ("--api-key=PLANTa2", "PLANTa2"),
    ("--hf-token 'PLANTa3'", "PLANTa3"),
    ("api_key='PLANTb1', tp_size=8", "PLANTb1"),
    ('{"api_key": "PLANTb2"}', "PLANTb2"),
    ("client_secret: PLANTb3", "PLANTb3"),
    ("aws_secret_access_key = PLANTb4", "PLANTb4"),
    ("AWS_SECRET_ACCESS_KEY=PLANTb5", "PLANTb5"),
    ("secret_access_key: PLANTb6", "PLANTb6"),
    ("hf_token: PLANTc1", "PLANTc1"),
    ("hf_token=PLANTc2", "PLANTc2"),
    ("auth_token='PLANTc3'", "PLANTc3"),
    ('{"token": "PLANTc4"}', "PLANTc4"),
    ("token=PLANTc5", "PLANTc5"),
    ("HF_TOKEN=PLANTc6", "PLANTc6"),
    ("PGPASSWORD=PLANTd1 psql -h db", "PLANTd1"),
    ("MYSQL_PWD=PLANTd2 mysql", "PLANTd2"),
    ("DB_PASSWORD=PLANTd3", "PLANTd3"),
    ("mysql -u root -pPLANTd4 prod", "PLANTd4"),
    ('password="PLANT two words" user=x', "PLANT two words"),
    ("password='PLANT two words'", "PLANT two words"),
    ('HF_TOKEN="PLANT with space"', "PLANT with space"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=PLANTe1+/Zq==;EndpointSuffix=core.windows.net",
     "PLANTe1+/Zq=="),
    ("Server=db;User Id=sa;Password=PLANTe2;", "PLANTe2"),
    ("redis://:PLANTf1@cache:6379/0", "PLANTf1"),
    ("postgres://bob:PLANTf2@db.internal:5432/app", "PLANTf2"),
    ("https://bob:PLANT@f3/x@models.example/drafter", "PLANT@f3/x"),
    ("GET https://api.example/v1/models?key=PLANTg1&page=2", "PLANTg1"),
    ("https://hub.example/file?a=1&token=PLANTg2", "PLANTg2"),
    ("https://bucket.s3.amazonaws.com/o?X-Amz-Signature=PLANTg3abc", "PLANTg3abc"),
    ("Authorization: Bearer PLANTh1", "PLANTh1"),
    ("authorization=Basic PLANTh2", "PLANTh2"),
    ("curl -H 'Proxy-Authorization: PLANTh3'", "PLANTh3"),
    ("Cookie: session=PLANTh4; theme=dark", "session=PLANTh4; theme=dark"),
    ("Set-Cookie: sid=PLANTh5; HttpOnly", "sid=PLANTh5; HttpOnly"),
    ('"cookie": "PLANTh6"', "PLANTh6"),
    ("bearer PLANTh7.abc", "PLANTh7.abc"),
    ("hf_PLANTHuggingFaceTokenabcdefghij", "hf_PLANTHuggingFaceTokenabcdefghij"),
    ("login with hf_PLaNt12", "hf_PLaNt12"),
    ("sk-PLANTopenaiKEYabcdefghij", "sk-PLANTopenaiKEYabcdefghij"),
    ("AKIAPLANTAWSKEYABCDE", "AKIAPLANTAWSKEYABCDE"),
    ("ghp_PLANTgithubTOKENabcdefghijklmnopqrstu", "ghp_PLANTgithubTOKENabcdefghijklmnopqrstu"),
    ("github_pat_PLANT0123456789abcdefghij", "github_pat_PLANT0123456789abcdefghij"),
    ("glpat-PLANTgitlabTOKENabcdefg", "glpat-PLANTgitlabTOKENabcdefg"),
    ("xoxb-1234-PLANTslackTOKEN", "xoxb-1234-PLANTslackTOKEN"),
    ("nvapi-PLANTnvidiaKEYabcdefghijklmno", "nvapi-PLANTnvidiaKEYabcdefghijklmno"),
    ("AIzaPLANTgoogleKEYabcdefghijklmnopqrstu", "AIzaPLANTgoogleKEYabcdefghijklmnopqrstu"),
    ("got eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTEFOVCJ9.PLANTsig_abc here", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTEFOVCJ9"),
    ("-----BEGIN RSA PRIVATE KEY-----" + PEM_BODY, PEM_BODY),
    (PEM_BODY, PEM_BODY),  # a key's body line, alone in its row
    (f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nAbCd==\n-----END PRIVATE KEY-----", PEM_BODY),
]

# Lines from real logs that hold no secret: they must come out unchanged.
ORDINARY = [
    "[2026-08-14 14:02:47 TP0] Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, accept len: 1.67",
    "[2026-08-14 14:02:47 TP0] Prefill batch. #new-seq: 1, #new-token: 1024, #cached-token: 0, token usage: 0.01",
    "--max-total-tokens 1000 --speculative-num-draft-tokens 4 --tokenizer-path /models/x",
    "---------------Inter-token Latency----------------",
    'INFO: 127.0.0.1:42472 - "POST /v1/completions HTTP/1.1" 200 OK',
    "max_total_num_tokens=234094, chunked_prefill_size=8192, max_prefill_tokens=16384",
    "bucket_time_to_first_token = [0.001, 0.005, 0.01]",
    "time_to_first_token: 0.25, inter_token: 0.01, per_token=3",
    "eos_token='</s>', pad_token=None, bos_token_id=1",
    "hf_config_path=None, hf_overrides={}, skip_tokenizer_init=False",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "https://huggingface.co/AQ-MedAI/Kimi-K2-Instruct-eagle3?revision=main",
    "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
]


@pytest.mark.parametrize("line,secret", CORPUS, ids=[c[0][:40] for c in CORPUS])
def test_each_shape_is_redacted_the_same_by_both_engines(line, secret):
    clean = redact(line)
    assert secret not in clean and MARK in clean, clean
    assert pl.select(redact_expr(pl.lit(line))).item() == clean
    assert redact_obj({"line": [line]}) == {"line": [clean]}
    assert redact(clean) == clean  # stable: a second pass changes nothing


def test_the_rest_of_a_line_is_kept():
    assert redact("aws_secret_access_key = X1 region=us-east-1") == "aws_secret_access_key = REDACTED region=us-east-1"
    assert redact("redis://:pw@cache:6379/0") == "redis://:REDACTED@cache:6379/0"
    assert redact("https://u:p@ss/w0rd@host/x") == "https://u:REDACTED@host/x"
    assert redact("mysql -u root -phunter2 db") == "mysql -u root -pREDACTED db"
    assert redact('password="two words" x=1') == 'password="REDACTED" x=1'
    assert redact("GET /v1?key=abc&page=2") == "GET /v1?key=REDACTED&page=2"
    assert redact("Cookie: a=b; c=d") == "Cookie: REDACTED"


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_are_left_alone(line):
    assert redact(line) == line
    assert pl.select(redact_expr(pl.lit(line))).item() == line


@pytest.mark.parametrize("key,secret", [
    ("api_key", True), ("hf_token", True), ("HF_TOKEN", True), ("password", True), ("db-password", True),
    ("aws_secret_access_key", True), ("AccountKey", True), ("cookie", True), ("MYSQL_PWD", True),
    ("bucket_time_to_first_token", False), ("time_to_first_token", False), ("eos_token", False),
    ("max_new_token", False), ("tokens", False), ("tokenizer", False), ("model_path", False),
])
def test_secret_keys(key, secret):
    assert secret_key(key) is secret
    frame = redact_frame(pl.DataFrame({"key": [key], "value": ["hunter2"], "value_num": [1.0]}))
    assert frame.row(0) == ((key, MARK, None) if secret else (key, "hunter2", 1.0))
    assert redact_obj({key: "hunter2"}) == {key: MARK if secret else "hunter2"}


def test_key_value_pairs_inside_lists():
    pairs = pl.DataFrame({"extra": [[{"key": "hf_token", "value": "hunter2"}, {"key": "x", "value": "sk-" + "a" * 20}]]},
                         schema={"extra": pl.List(pl.Struct({"key": pl.String, "value": pl.String}))})
    assert redact_frame(pairs)["extra"].to_list() == [[{"key": "hf_token", "value": MARK}, {"key": "x", "value": MARK}]]


def test_numbers_under_a_secret_key_in_json():
    assert redact_obj({"password": 123456, "first_token_ms": 3.5, "api_key_set": True}) == \
        {"password": MARK, "first_token_ms": 3.5, "api_key_set": True}
