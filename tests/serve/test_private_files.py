"""Issue 22 item 9: the token file and the webhook secret file must be regular files owned by
the serving user or root, are never followed through a symlink, and a FIFO at the path does
not hang start-up (docs/operations.md#token-file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.serve.auth import TokenError, load_token  # noqa: E402
from schedlog.serve.webhook import SecretError, load_secret  # noqa: E402

NOBODY = 65534


def private(path: Path, text: str = "k" * 40) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def refused_codes(path: Path) -> tuple[str, str]:
    with pytest.raises(TokenError) as token:
        load_token(path, environ={})
    with pytest.raises(SecretError) as secret:
        load_secret(str(path), environ={})
    return token.value.code, secret.value.code


def test_a_symlink_is_refused_even_to_a_good_file(tmp_path: Path) -> None:
    target = private(tmp_path / "real.token")
    link = tmp_path / "link.token"
    link.symlink_to(target)
    assert refused_codes(link) == ("token-file-type", "webhook-secret-type")


def test_a_dangling_symlink_is_not_followed_to_create_a_file(tmp_path: Path) -> None:
    link = tmp_path / "link.token"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TokenError) as refused:
        load_token(link, environ={})
    assert refused.value.code == "token-file-type"
    assert not (tmp_path / "elsewhere").exists()


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.token"
    os.mkfifo(fifo, 0o600)  # a blocking open for reading would wait for a writer forever
    assert refused_codes(fifo) == ("token-file-type", "webhook-secret-type")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.token"
    folder.mkdir(mode=0o700)
    assert refused_codes(folder) == ("token-file-type", "webhook-secret-type")


def test_a_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = private(tmp_path / "other.token")
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)  # as root: a 0600 file of nobody's
    else:
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    token_code, secret_code = refused_codes(path)
    assert (token_code, secret_code) == ("token-file-owner", "webhook-secret-owner")


def test_a_good_file_of_this_user_is_read(tmp_path: Path) -> None:
    path = private(tmp_path / "ok.token", "t" * 20 + "\n")
    assert load_token(path, environ={}) == ("t" * 20, path)
    assert load_secret(str(path), environ={}) == b"t" * 20
