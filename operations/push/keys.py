"""The VAPID key pair (RFC 8292): generated on first use and kept in the data dir, like the secret key.

The private key lives in `<data dir>/vapid_private_key.pem` (PKCS#8 PEM, mode 0600, written under a temporary
name and renamed into place so two processes starting together never read half a key). Every subscription a
browser makes is bound to the public key: replacing the file makes every existing subscription useless (the
push services answer 401/403 until each browser subscribes again).
"""

from __future__ import annotations

import base64
import contextlib
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from py_vapid import Vapid

KEY_FILE_NAME = "vapid_private_key.pem"


def vapid_key_path() -> Path:
    return Path(settings.DATA_DIR) / KEY_FILE_NAME


def _generated(path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    # Never replaces a key another process wrote meanwhile: the first one stays, the others read it.
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def vapid_private_key() -> ec.EllipticCurvePrivateKey:
    """This installation's VAPID private key, generated on the first call of all (file mode 0600)."""
    path = vapid_key_path()
    if not path.exists():
        _generated(path)
    if path.stat().st_mode & 0o777 != 0o600:
        with contextlib.suppress(PermissionError):  # not ours to change (a shared mount): the owner decides
            path.chmod(0o600)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError(f"{path} does not hold a P-256 private key")
    return key


def vapid_signer() -> Vapid:
    return Vapid(private_key=vapid_private_key())


def application_server_key() -> str:
    """The public key as browsers take it for `PushManager.subscribe`: the uncompressed P-256 point,
    URL-safe base64 without padding (87 characters)."""
    point = vapid_private_key().public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return base64.urlsafe_b64encode(point).rstrip(b"=").decode("ascii")
