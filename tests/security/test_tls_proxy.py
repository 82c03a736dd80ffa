"""Serving on a network: the app behind nginx terminating TLS, logged in over HTTPS (README "Serving on a network").

A real nginx (Debian's, installed by `make test`) with a self-signed
certificate made here, in front of a real Daphne with
`ELION_BEHIND_TLS_PROXY=1`: the login page's CSRF check passes over HTTPS,
the session and CSRF cookies are `Secure`, and responses carry HSTS.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.live_server import LiveApp, free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "correct horse battery"


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def nginx_conf(run_dir: Path, *, tls_port: int, app_port: int, cert: Path, key: Path) -> Path:
    (run_dir / "tmp").mkdir()
    user_line = ""
    if os.geteuid() == 0:
        user_line = "user www-data;"
        shutil.chown(run_dir / "tmp", "www-data")
        os.chmod(key, 0o644)  # read by the master (root) anyway; workers never read it
    conf = run_dir / "nginx.conf"
    conf.write_text(f"""
{user_line}
worker_processes 1;
daemon off;
pid {run_dir}/nginx.pid;
error_log {run_dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {run_dir}/tmp/body;
    proxy_temp_path {run_dir}/tmp/proxy;
    fastcgi_temp_path {run_dir}/tmp/fastcgi;
    uwsgi_temp_path {run_dir}/tmp/uwsgi;
    scgi_temp_path {run_dir}/tmp/scgi;
    server {{
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://127.0.0.1:{app_port};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
""")
    return conf


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def nginx_binary() -> str:
    """Debian's nginx, which `make test` installs (scripts/test.sh); its absence is a failure, not a skip."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        pytest.fail("nginx is missing: apt-get install -y nginx (scripts/test.sh does it)")
    return found


def test_serving_on_a_network_behind_nginx_tls_the_owner_logs_in_over_https(tmp_path):
    nginx_path = nginx_binary()
    tls_port = free_port()
    origin = f"https://localhost:{tls_port}"
    app = LiveApp(
        {"ELION_OWNER_PASSWORD": PASSWORD, "ELION_BEHIND_TLS_PROXY": "1", "ELION_TRUSTED_ORIGINS": origin}
    ).start()
    cert, key = self_signed_certificate(tmp_path)
    conf = nginx_conf(tmp_path, tls_port=tls_port, app_port=app.port, cert=cert, key=key)
    nginx = subprocess.Popen([nginx_path, "-c", str(conf), "-p", str(tmp_path)])
    try:
        wait_for_port(tls_port)
        with httpx.Client(base_url=origin, verify=ssl.create_default_context(cafile=str(cert)), timeout=10) as client:
            page = client.get("/login/")
            assert page.status_code == 200
            assert "max-age=" in page.headers.get("strict-transport-security", "")
            csrf_cookie = next(h for h in page.headers.get_list("set-cookie") if h.startswith("csrftoken="))
            assert "Secure" in csrf_cookie
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            login = client.post(
                "/login/", data={"password": PASSWORD, "csrfmiddlewaretoken": token}, headers={"Referer": f"{origin}/login/"}
            )
            assert login.status_code == 302, login.text[:300]
            session_cookie = next(h for h in login.headers.get_list("set-cookie") if h.startswith("sessionid="))
            assert "Secure" in session_cookie and "HttpOnly" in session_cookie
            assert client.get("/api/settings/").status_code == 200
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        app.stop()
