"""Django settings, all read from the environment through `elion.base.env`.

The table of variables is docs/configuration.md.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import dj_database_url

from elion.base import env

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env.data_dir()

SECRET_KEY = env.secret_key(DATA_DIR)
DEBUG = env.boolean("DJANGO_DEBUG", False)
TESTING = env.boolean("ELION_TESTING", False)

# Owner access: with a password, protection is on; without, loopback only.
ELION_OWNER_PASSWORD = env.optional_text("ELION_OWNER_PASSWORD")
ELION_API_TOKEN = env.optional_text("ELION_API_TOKEN")
ELION_PROTECTED = ELION_OWNER_PASSWORD is not None

# Hosts (DNS rebinding): loopback names always; any other name only with protection on and
# listed in ELION_ALLOWED_HOSTS. `elion.web.host_guard` refuses other Host headers on HTTP and WebSocket.
LOOPBACK_HOST_NAMES = ["localhost", "127.0.0.1", "[::1]"]
ELION_ALLOWED_HOSTS = env.host_list("ELION_ALLOWED_HOSTS")
if ELION_ALLOWED_HOSTS and not ELION_PROTECTED:
    raise env.ConfigurationError(
        "ELION_ALLOWED_HOSTS names hosts other than loopback, which needs ELION_OWNER_PASSWORD: "
        "without it Elion serves loopback only."
    )
ALLOWED_HOSTS = [*LOOPBACK_HOST_NAMES, *ELION_ALLOWED_HOSTS]

INSTALLED_APPS = [
    "daphne",
    # The admin with a "Tools" section (Continuity Cleanup, reconciliation status).
    "elion.web.admin_site.ElionAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Django's staticfiles, leaving out files no page uses (`elion.apps.StaticFilesConfig`).
    "elion.apps.StaticFilesConfig",
    "rest_framework",
    "drf_spectacular",
    "channels",
    "django_q",
    # The durable transcript's rows (seed 004): conversations, messages, attachments (issue 45).
    "transcript",
    "conversations",
    "memories",
    "continuity",
    "archive",
    "artifacts",
    "check_ins",
    # The project package: the login throttle's rows (`elion.models`).
    "elion",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # HTML pages and fragments gzip-compressed (never a streamed response): `elion.web.page_compression`.
    "elion.web.page_compression.HtmlGZipMiddleware",
    # The database known down: 503 at once, before the session (or anything) waits on it (`elion.base.database_breaker`).
    "elion.base.database_errors.DatabaseBreakerMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # NUL bytes and unpaired surrogates in query strings and page forms → 400 `invalid_characters`.
    "elion.base.input_checks.InputCheckMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "elion.base.access.OwnerAccessMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Service errors a page view lets rise: NotFound → the 404 page, others → their status;
    # under /api/ any other exception is the JSON `internal_error` (logged once).
    "elion.base.service_errors.ServiceErrorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on every HTML page (no inline script or style anywhere).
    "elion.base.content_security.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "elion.web.urls"
ASGI_APPLICATION = "elion.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "conversations.web.context_processors.elion",
                "elion.web.access.backup_health.backup_banner",
            ],
        },
    },
]

# This process is the django-q2 cluster (`manage.py qcluster`), not a web server.
_IN_QUEUE_CLUSTER = len(sys.argv) > 1 and sys.argv[1] == "qcluster"
_database_url = env.optional_text("DATABASE_URL")
if _database_url:
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=0)}
    # Not in `qcluster`: its forked workers must not share a pool's connections (PostgreSQL protocol errors).
    if DATABASES["default"]["ENGINE"].endswith("postgresql") and not _IN_QUEUE_CLUSTER:
        # A pool: opening a PostgreSQL connection per request cost ~5 ms a send
        # (bench/send_overhead.py). A connection is checked out only while a request
        # or a reply's write runs, never across provider I/O (docs/operations-database.md
        # sizes it against PostgreSQL's max_connections and the workers). A request
        # that gets none within the timeout answers 503 `database_busy`.
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 2,
            "max_size": env.integer("ELION_DB_POOL_MAX", 20, minimum=2),
            "timeout": env.integer("ELION_DB_POOL_TIMEOUT", 10, minimum=1),
            # While the server is away the pool's connection attempts back off (1, 2, 4… s) for this
            # long, then give up; the next request starts a fresh attempt. The default (300 s) left
            # the first request after an outage waiting out the back-off (a 20 s first send).
            "reconnect_timeout": 3,
        }
        # The pool checks a connection as it hands it out (`ConnectionPool.check_connection`): one the
        # server dropped (a restart) is replaced, so the first request after an outage works.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",  # pooled, see below
            # ELION_SQLITE_PATH lets a test's subprocess server share the test database file.
            "NAME": env.text("ELION_SQLITE_PATH") or DATA_DIR / "elion.sqlite3",
            "OPTIONS": {
                # WAL lets readers run beside the streaming writer; IMMEDIATE
                # transactions take the write lock up front so two writers
                # queue on busy_timeout instead of failing mid-transaction.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": DATA_DIR / "test_elion.sqlite3"},
        }
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's SQLite backend plus a small pool of idle connections, for the
    # embedded default and a sqlite:// DATABASE_URL alike: a new connection
    # per request cost ~4 ms a send (bench/send_overhead.py).
    DATABASES["default"]["ENGINE"] = "elion.base.db.backends.sqlite3"
DATABASE_IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
if not DATABASE_IS_POSTGRES and str(DATABASES["default"]["NAME"]) != ":memory:":
    # The database holds session keys: this user only (0600, with its -wal and -shm files).
    env.private_file(Path(DATABASES["default"]["NAME"]))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.optional_text("REDIS_URL")
# Every reply delta is published to its conversation's group (watchers in any
# worker process follow it), so a channel holds up to this many events before
# the layer drops for a slow reader; a watcher that misses a delta re-reads
# the stored text (`conversations.sending.watch`).
CHANNEL_CAPACITY = 1000
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": CHANNEL_CAPACITY},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"capacity": CHANNEL_CAPACITY}}}

Q_CLUSTER = {
    "name": "elion",
    "workers": env.integer("ELION_QUEUE_WORKERS", 2, minimum=1),
    "timeout": 300,
    "retry": 360,
    "max_attempts": 3,
    "catch_up": False,
    "label": "Queue",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

AUTH_PASSWORD_VALIDATORS: list[dict] = []
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
LOGIN_URL = "/login/"

# Serving on a network: behind a TLS-terminating proxy (nginx, Caddy) that sets X-Forwarded-Proto.
# Trusted origins are the https:// origins browsers will send (CSRF), e.g. https://chat.example.org.
ELION_BEHIND_TLS_PROXY = env.boolean("ELION_BEHIND_TLS_PROXY", False)
CSRF_TRUSTED_ORIGINS = env.origin_list("ELION_TRUSTED_ORIGINS")
if ELION_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.integer("ELION_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = False  # the owner's other sites under the same name are not ours to decide
    SECURE_SSL_REDIRECT = False  # the proxy redirects plain HTTP; the app behind it sees HTTP on loopback
    # `manage.py check --deploy` clean behind the proxy: these three are decided above, on purpose.
    SILENCED_SYSTEM_CHECKS = [
        "security.W005",  # HSTS without includeSubDomains: the owner's other sites under the name are not ours
        "security.W008",  # no SECURE_SSL_REDIRECT: the proxy redirects plain HTTP; the app sees HTTP on loopback
        "security.W021",  # no HSTS preload: a preload list entry binds every subdomain for months; the owner's call
    ]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# Hashed, gzip- and brotli-compressed static files (`elion.base.static_storage`), served by WhiteNoise as immutable;
# `collectstatic` writes them (`make run` does). The test suite serves the source files as they are
# (no collectstatic step before every run); tests/pages/test_static_files.py collects and serves the real thing.
# (pytest-django reads these settings before tests/conftest.py sets ELION_TESTING, hence the module check.)
STATIC_HASHED = env.boolean("ELION_STATIC_HASHED", not TESTING and "pytest" not in sys.modules)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "elion.base.static_storage.HashedCompressedStaticStorage"
        if STATIC_HASHED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG or TESTING
# The web app manifest (static/manifest.webmanifest) under its registered media type.
WHITENOISE_MIMETYPES = {".webmanifest": "application/manifest+json"}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["elion.base.access.OwnerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["elion.base.access.IsOwner"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        # DRF's parsers behind the input checks: NUL, unpaired surrogates, JSON deeper than 64 levels.
        "elion.base.input_checks.CheckedJSONParser",
        "elion.base.input_checks.CheckedMultiPartParser",
        "elion.base.input_checks.CheckedFormParser",
    ],
    "EXCEPTION_HANDLER": "elion.base.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # `?format=markdown|json` on export is ours, not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Elion API",
    "DESCRIPTION": "Continuity-governed companion chat. See docs/api.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Two choice sets share the field name `kind`: the Library's file kinds get a name of their own.
    # A memory's and a check-in's proposal share one status enum (pending, approved, dismissed; issue 44).
    "ENUM_NAME_OVERRIDES": {"LibraryFileKindEnum": "archive.models.LibraryFileKind",
                            "ProposalStatusEnum": ["pending", "approved", "dismissed"]},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "conversations.web.schema.add_streaming_endpoints",
        # The voice routes that call the provider (async views, as the send): `conversations.web.voice.schema`.
        "conversations.web.voice.schema.add_voice_endpoints",
        # After the hand-written operations: each declares the owner's credentials (`elion.web.api_schema`).
        "elion.web.api_schema.owner_security_on_every_operation",
    ],
}

# --- Provider -------------------------------------------------------------
OPENAI_API_KEY = env.optional_text("OPENAI_API_KEY")
OPENAI_BASE_URL = env.optional_text("OPENAI_BASE_URL")
ELION_MODEL = env.text("ELION_MODEL", "gpt-5.5")
ELION_API_SELECTOR = env.choice("ELION_API_SELECTOR", "responses", {"responses", "chat.completions"})
ELION_PROVIDER_ID = env.text("ELION_PROVIDER_ID", "openai")
ELION_DEPLOYMENT = env.text("ELION_DEPLOYMENT", "")
ELION_PROVIDER_TIMEOUT_SECONDS = env.integer("ELION_PROVIDER_TIMEOUT_SECONDS", 120, minimum=1)

# Model-specific app input safety budget: well under the native window so
# system instructions, tools and the reply keep room.
_MODEL_INPUT_BUDGETS = {"gpt-5": 200_000, "gpt-4.1": 200_000, "gpt-4o": 100_000}
_default_budget = next(
    (budget for prefix, budget in _MODEL_INPUT_BUDGETS.items() if ELION_MODEL.startswith(prefix)),
    32_000,
)
ELION_INPUT_BUDGET_TOKENS = env.integer("ELION_INPUT_BUDGET_TOKENS", _default_budget, minimum=1000)
# When a history must be trimmed, how far back past what the budget needs it may be cut, as a share of
# the input budget (at most 25%; 0: just enough). The sends after a trim then extend the same prefix,
# which the provider's prompt cache serves (docs/budget.md; the default is measured by bench/budget_cost.py).
ELION_TRIM_STEP = env.share("ELION_TRIM_STEP", Decimal("0.15"), maximum=Decimal("0.25"))

# Prices for the Settings -> Usage cost estimate, USD per million tokens (unset: no estimate).
# Cached input unset: billed at the input price. See operations/usage.py.
ELION_PRICE_INPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_INPUT_PER_MTOK")
ELION_PRICE_CACHED_INPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_CACHED_INPUT_PER_MTOK")
ELION_PRICE_OUTPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_OUTPUT_PER_MTOK")
# Audio (issue 43), USD; unset: that call is not estimated. See operations/audio_usage.py.
# Transcription billed in tokens (gpt-4o-transcribe): audio input, text input (unset: the audio price), output.
ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK")
ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK")
ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK = env.optional_decimal("ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK")
# Transcription billed by the minute (whisper-1), or reported in no tokens.
ELION_PRICE_TRANSCRIBE_PER_MINUTE = env.optional_decimal("ELION_PRICE_TRANSCRIBE_PER_MINUTE")
# Speech reports no usage: priced per minute of audio made, else per million characters sent.
ELION_PRICE_SPEECH_PER_MINUTE = env.optional_decimal("ELION_PRICE_SPEECH_PER_MINUTE")
ELION_PRICE_SPEECH_PER_MCHAR = env.optional_decimal("ELION_PRICE_SPEECH_PER_MCHAR")

# --- Transcript -------------------------------------------------------------
ELION_MAX_MESSAGE_CHARACTERS = env.integer("ELION_MAX_MESSAGE_CHARACTERS", 100_000, minimum=1)
# A streaming reply's lease: renewed while the stream lives; a reply whose
# lease ran out belongs to a dead process and becomes `interrupted`.
ELION_STREAM_LEASE_SECONDS = env.integer("ELION_STREAM_LEASE_SECONDS", 30, minimum=1)
ELION_FLUSH_INTERVAL_SECONDS = 0.25
ELION_FLUSH_CHARACTERS = 2_000
# A private chat is deleted forever (the permanent-deletion steps, with a
# receipt) after this many days without activity (django-q2, hourly).
ELION_PRIVATE_CHAT_DAYS = env.integer("ELION_PRIVATE_CHAT_DAYS", 30, minimum=1)
# Check-ins (issue 44, docs/check_ins.md): a due time missed while the server was down runs once at the
# next start if it is younger than this (seconds; default 6 hours), else it is recorded as skipped.
ELION_CHECK_IN_MAX_LATE = env.integer("ELION_CHECK_IN_MAX_LATE", 6 * 3600, minimum=0)
# A worker running a check-in holds its run this long; a run whose worker died is taken again after it.
ELION_CHECK_IN_LEASE_SECONDS = env.integer("ELION_CHECK_IN_LEASE_SECONDS", 600, minimum=1)
# Memory proposals (issue 35): at most this many wait for the owner per conversation.
ELION_MEMORY_PROPOSALS_PENDING_MAX = env.integer("ELION_MEMORY_PROPOSALS_PENDING_MAX", 3, minimum=1)

# --- Attachments --------------------------------------------------------------
# Content-addressed blobs live under ELION_ATTACHMENT_ROOT (uploads/, one store
# per conversation, tmp/). Limits answer 413/400; the garbage collector leaves
# anything younger than the grace period alone.
ELION_ATTACHMENT_ROOT = Path(env.text("ELION_ATTACHMENT_ROOT") or DATA_DIR / "attachments")
ELION_ATTACHMENT_MAX_BYTES = env.integer("ELION_ATTACHMENT_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
ELION_ATTACHMENTS_PER_MESSAGE = env.integer("ELION_ATTACHMENTS_PER_MESSAGE", 10, minimum=1)
ELION_ATTACHMENT_MAX_TEXT_CHARACTERS = env.integer("ELION_ATTACHMENT_MAX_TEXT_CHARACTERS", 200_000, minimum=1)
ELION_ATTACHMENT_GC_GRACE_SECONDS = env.integer("ELION_ATTACHMENT_GC_GRACE_SECONDS", 24 * 3600, minimum=0)
# Per process: the base64 data URLs of verified images, least recently used dropped past this
# many bytes (transcript.attachments.encoded_cache); 0 turns the cache off.
ELION_ATTACHMENT_ENCODED_CACHE_BYTES = env.integer("ELION_ATTACHMENT_ENCODED_CACHE_BYTES", 320 * 1024 * 1024, minimum=0)

# --- Continuity -------------------------------------------------------------
HANDOFF_PER_MESSAGE_CHARACTER_LIMIT = env.int_or_default("HANDOFF_PER_MESSAGE_CHARACTER_LIMIT", 20_000)
HANDOFF_TOTAL_CHARACTER_BUDGET = env.int_or_default("HANDOFF_TOTAL_CHARACTER_BUDGET", 60_000)
# Legacy prompt reconciliation (django-q2 jobs, never at start-up): batch, attempts a prompt, first delay (doubling).
ELION_RECONCILE_BATCH_SIZE = env.integer("ELION_RECONCILE_BATCH_SIZE", 200, minimum=1)
# Stored prompts rebuilt per batch by a refresh: a concurrent send waits for at most one batch's write.
ELION_PROMPT_REFRESH_BATCH = env.integer("ELION_PROMPT_REFRESH_BATCH", 50, minimum=1)
ELION_MALLOC_ARENAS = env.integer("ELION_MALLOC_ARENAS", 2, minimum=0)  # a web server's (`elion.base.malloc_arenas`)
# Server processes freeze their startup objects out of the collector's full passes (`elion.base.startup_objects`).
ELION_GC_FREEZE = env.boolean("ELION_GC_FREEZE", True)
ELION_QUEUE_CLUSTER_PROCESS = _IN_QUEUE_CLUSTER  # this process is the queue's cluster (it freezes at ready)
# From this many marked prompts on, the batches run on the queue's worker (`prompt_refresh.stale_prompts_settle`);
# fewer, about 4 ms each, in the operation's own process (under half a second at the default).
ELION_PROMPT_REFRESH_ON_QUEUE = env.boolean("ELION_PROMPT_REFRESH_ON_QUEUE", True)
# In the cluster's own processes an operation's refresh runs in place: its worker is the one it would wait for.
ELION_PROMPT_REFRESH_IN_PLACE = _IN_QUEUE_CLUSTER
ELION_PROMPT_REFRESH_QUEUE_FROM = env.integer("ELION_PROMPT_REFRESH_QUEUE_FROM", 100, minimum=1)
# Milliseconds without progress after which the operation stops waiting for the worker and rebuilds the rest
# itself (no cluster running, every worker busy). The ORM broker polls every 0.2 s and a batch takes about 0.2 s.
ELION_PROMPT_REFRESH_QUEUE_PATIENCE_MS = env.integer("ELION_PROMPT_REFRESH_QUEUE_PATIENCE_MS", 3000, minimum=1)
# The queue's task rebuilds for at most this long, then queues the next slice (within Q_CLUSTER's timeout).
ELION_PROMPT_REFRESH_SLICE_SECONDS = env.integer("ELION_PROMPT_REFRESH_SLICE_SECONDS", 60, minimum=1)
ELION_RECONCILE_MAX_ATTEMPTS = env.integer("ELION_RECONCILE_MAX_ATTEMPTS", 5, minimum=1)
ELION_RECONCILE_RETRY_SECONDS = env.integer("ELION_RECONCILE_RETRY_SECONDS", 60, minimum=0)

# --- Archive and Library ----------------------------------------------------
# One archive document or Library file; a ChatGPT export (zip or JSON); the
# export's conversations.json once unpacked; members a zip may list.
ELION_ARCHIVE_MAX_FILE_BYTES = env.integer("ELION_ARCHIVE_MAX_FILE_BYTES", 20 * 1024 * 1024, minimum=1)
ELION_ARCHIVE_IMPORT_MAX_BYTES = env.integer("ELION_ARCHIVE_IMPORT_MAX_BYTES", 1024**3, minimum=1)
ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES = env.integer("ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES", 512 * 1024**2, minimum=1)
ELION_ARCHIVE_IMPORT_MAX_MEMBERS = env.integer("ELION_ARCHIVE_IMPORT_MAX_MEMBERS", 50_000, minimum=1)
# Image generation (Settings -> Image generation): the image model, on both selectors (the
# Responses built-in tool's `model`, the Images API's `model` for `generate_image`), and how many
# partial images a Responses image streams before the final one (0-3).
ELION_IMAGE_MODEL = env.text("ELION_IMAGE_MODEL", "gpt-image-2.5-sunburst")

# --- Voice (docs/voice.md) ----------------------------------------------------
# Dictation and Talk: the transcription model (`audio.transcriptions.create`) and the speech
# model of Read aloud (`audio.speech.create`), on the conversation's own provider binding.
ELION_TRANSCRIBE_MODEL = env.text("ELION_TRANSCRIBE_MODEL", "gpt-4o-transcribe")
ELION_SPEECH_MODEL = env.text("ELION_SPEECH_MODEL", "gpt-4o-mini-tts")
# One recording: the provider's own upload limit (25 MiB) and ten minutes; more is a 413
# before the body is read (elion.base.request_bounds).
ELION_VOICE_MAX_BYTES = env.integer("ELION_VOICE_MAX_BYTES", 25 * 1024 * 1024, minimum=1)
ELION_VOICE_MAX_SECONDS = env.integer("ELION_VOICE_MAX_SECONDS", 600, minimum=1)
ELION_IMAGE_PARTIAL_IMAGES = min(env.integer("ELION_IMAGE_PARTIAL_IMAGES", 2, minimum=0), 3)
# The request's wire fields (docs/provider.md says why these defaults): `detail` on every image
# sent (`input_image.detail`, Chat `image_url.detail`), and `prompt_cache_retention` ("" sends none:
# the provider's default, which for GPT-5.5 is its only accepted value, 24h).
ELION_IMAGE_DETAIL = env.choice("ELION_IMAGE_DETAIL", "auto", {"auto", "low", "high", "original"})
ELION_PROMPT_CACHE_RETENTION = env.choice("ELION_PROMPT_CACHE_RETENTION", "", {"", "in_memory", "24h"})
# Which reasoning items travel back: "current_turn" (the reply's own, in its tool rounds; GPT-5.5 renders
# no others, so earlier turns' are bytes for nothing) or "all_turns" (every stored one, for models that
# render them, e.g. the GPT-5.6 family). docs/provider.md has the reading and the measurement.
ELION_REASONING_CONTEXT = env.choice("ELION_REASONING_CONTEXT", "current_turn", {"current_turn", "all_turns"})
# Background imports (`?background=true`): the uploaded files wait here for their job; a running job
# whose heartbeat is older than this many seconds belongs to a dead worker and may be resumed.
ELION_IMPORT_DIR = Path(env.text("ELION_IMPORT_DIR") or DATA_DIR / "imports")
ELION_IMPORT_STALE_SECONDS = env.integer("ELION_IMPORT_STALE_SECONDS", 120, minimum=1)
# A job runs in slices of about this long (each one django-q2 task, within Q_CLUSTER's timeout).
ELION_IMPORT_SLICE_SECONDS = env.integer("ELION_IMPORT_SLICE_SECONDS", 240, minimum=1)
# An export sent in pieces (`archive.services.upload_pieces`): at most this many bytes a request, since the ASGI
# server holds a request's whole body in memory.
ELION_UPLOAD_PIECE_BYTES = env.integer("ELION_UPLOAD_PIECE_BYTES", 8 * 1024 * 1024, minimum=1024)
# Rounds in which the model may call tools before it must answer in text.
ELION_MAX_TOOL_ROUNDS = env.integer("ELION_MAX_TOOL_ROUNDS", 4, minimum=1)

# Backups that run themselves (docs/operations.md, "Scheduled backups"). Encryption: a passphrase (age's scrypt)
# or age recipients (`age1…` or `ssh-ed25519 …`, separated by commas or new lines), so that the server need hold
# no key that decrypts. Destinations: a folder outside the data dir, or an S3-compatible bucket (credentials from
# the standard AWS environment variables). Without a key and a destination no scheduled backup runs.
ELION_BACKUP_PASSPHRASE = env.secret_text("ELION_BACKUP_PASSPHRASE")
ELION_BACKUP_RECIPIENTS = env.text("ELION_BACKUP_RECIPIENTS")
ELION_BACKUP_DIR = env.text("ELION_BACKUP_DIR")
ELION_BACKUP_S3_URL = env.text("ELION_BACKUP_S3_URL")
ELION_BACKUP_S3_BUCKET = env.text("ELION_BACKUP_S3_BUCKET")
ELION_BACKUP_S3_PREFIX = env.text("ELION_BACKUP_S3_PREFIX", "elion/")
# Where a backup is staged (written, encrypted, fetched back and restored for verification), then removed.
ELION_BACKUP_STAGING_DIR = Path(env.text("ELION_BACKUP_STAGING_DIR") or DATA_DIR / "backup-staging")

# Web Push (issue 44, docs/push.md). The VAPID key pair is generated on first use and kept in the data dir
# (`vapid_private_key.pem`, mode 0600). The contact is the VAPID `sub` claim push services may write to:
# a `mailto:` or `https:` URL of the operator. Every push request is bounded by the timeout (connect and read).
ELION_PUSH_CONTACT = env.text("ELION_PUSH_CONTACT", "mailto:owner@example.com")
ELION_PUSH_TIMEOUT_SECONDS = env.integer("ELION_PUSH_TIMEOUT_SECONDS", 10, minimum=1)
# Endpoints must be https; plain http to a loopback address is accepted only with this on (the tests' push
# service on 127.0.0.1). Never needed in production: every browser's push service is https.
ELION_PUSH_HTTP_LOOPBACK = env.boolean("ELION_PUSH_HTTP_LOOPBACK", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # The provider key never reaches a log line, whole or in part.
    "filters": {"redact_key": {"()": "elion.base.redaction.KeyRedactingFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_key"]}},
    "root": {"handlers": ["console"], "level": env.text("ELION_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        # The SDK's HTTP client logs every request at INFO; that is noise here.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}
