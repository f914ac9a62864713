"""Settings come from the environment; the defaults give the embedded runtime
(SQLite file, eager Celery, media on local disk) so `make run` needs nothing else."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from benchforge.storage import media_storages

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("BENCHFORGE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEV_SECRET_KEY = "benchforge-dev-only-insecure-key-do-not-use-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY") or DEV_SECRET_KEY
# The warning about the development key is printed once, when a server starts
# (benchforge.apps.warn_about_dev_key), not by every management command.

DEBUG = env_bool("DEBUG", True)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("DEBUG is off but SECRET_KEY is not set: set SECRET_KEY in the environment.")
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()]
CSRF_FAILURE_VIEW = "benchforge.views.csrf_failure"
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "benchforge",
    "jobs",
    "llm",
    "curation",
    "annotation",
    "rewrite",
    "qc",
    "exports",
    "labelstudio",
    "review",
    "humaneval",
    "evalserver",
    "analysis",
    "dashboard",
    "demo",
]

# Axes refuses locked-out logins before any password is checked; the role comes with the user
# in one query (every page checks it).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "benchforge.roles.RoleModelBackend"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "benchforge.security.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the browser's language (Accept-Language)
    "django.middleware.common.CommonMiddleware",
    "benchforge.inputs.RequestGuardMiddleware",  # before CSRF, the first to read a form body
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "benchforge.i18n.AccountLanguageMiddleware",  # the language kept on the account, when chosen
    "benchforge.middleware.LoginRequiredMiddleware",
    "benchforge.navigation.NavigationCountsMiddleware",  # a write drops the navigation's cached counts
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "benchforge.middleware.DomainErrorMiddleware",
    "benchforge.middleware.StyledNotFoundMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "benchforge.urls"
WSGI_APPLICATION = "benchforge.wsgi.application"

TEMPLATES = [
    {
        # Django's, with its i18n tags keeping constant translations per language (the module says why).
        "BACKEND": "benchforge.template_engine.BenchforgeTemplates",
        "NAME": "django",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "benchforge.permissions.context",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'benchforge.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")),
    )
}
if not os.environ.get("DATABASE_URL"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded runtime's SQLite file lives here
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Several request threads and jobs share one SQLite file. WAL lets readers go on while one
    # writes; IMMEDIATE makes every transaction take the write lock when it begins, so a second
    # writer waits (up to the timeout) instead of failing halfway with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# ---- security (docs/security.md) ----------------------------------------------------------------
# Login lockouts (django-axes): AXES_FAILURE_LIMIT failures for one username, or from one
# address, lock further attempts for the cool-off; a researcher can lift it earlier.
AXES_FAILURE_LIMIT = int(os.environ.get("BENCHFORGE_LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("BENCHFORGE_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "benchforge.auth.lockout_response"
AXES_CLIENT_IP_CALLABLE = "benchforge.security.client_ip"
AXES_VERBOSE = False
# Proxies in front of the app whose X-Forwarded-For is trusted (0: use the connection's address).
BENCHFORGE_TRUSTED_PROXIES = int(os.environ.get("BENCHFORGE_TRUSTED_PROXIES", "0"))
# Guessed API tokens: this many invalid tokens from one address in the window -> 429.
BENCHFORGE_TOKEN_FAILURE_LIMIT = int(os.environ.get("BENCHFORGE_TOKEN_FAILURE_LIMIT", "20"))
BENCHFORGE_TOKEN_FAILURE_WINDOW = 300
# API tokens are stored hashed and expire.
REST_KNOX = {"TOKEN_TTL": timedelta(days=int(os.environ.get("BENCHFORGE_TOKEN_DAYS", "30"))), "AUTO_REFRESH": False}

# Every response carries a Content-Security-Policy without inline script or style
# (benchforge.security.DEFAULT_CSP; BENCHFORGE_CSP replaces it).
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if not DEBUG:
    # Behind a proxy that terminates TLS: BENCHFORGE_PROXY_SSL_HEADER=1 trusts its
    # X-Forwarded-Proto; BENCHFORGE_SSL_REDIRECT=0 when the proxy redirects to https itself.
    if env_bool("BENCHFORGE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("BENCHFORGE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = env_bool("BENCHFORGE_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_HSTS_SECONDS = int(os.environ.get("BENCHFORGE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("BENCHFORGE_HSTS_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("BENCHFORGE_HSTS_PRELOAD", True)

# Throttle counters and lockout state live in the cache: set CACHE_URL (redis://...) when
# several web processes serve the app, so they share them.
CACHES = {
    "default": {"BACKEND": "benchforge.redis_cache.RedisCache", "LOCATION": os.environ["CACHE_URL"]}
    if os.environ.get("CACHE_URL")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# Sessions are read from that cache and kept in the database (benchforge/sessions.py says why).
SESSION_ENGINE = "benchforge.sessions"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
# The interface's languages; catalogs in locale/, compiled at install (`make setup`).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))

# Uploads: large files stream to disk; many files per request are allowed (drag and drop).
# Each limit is enforced while the body streams in (benchforge.inputs), never after the fact.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = 1000
MB = 1024 * 1024
# A benchmark's dashboard counts whole tables (items per task and stage, submissions per day,
# review rounds): its numbers are kept this long in the cache; 0 recounts on every view.
BENCHFORGE_DASHBOARD_CACHE_SECONDS = int(os.environ.get("BENCHFORGE_DASHBOARD_CACHE_SECONDS", "30"))
# Where work left for after a response runs (benchforge.after_response): "thread" (a background
# thread of the web process) or "inline" (the worker itself, before it takes the next request).
BENCHFORGE_AFTER_RESPONSE = os.environ.get("BENCHFORGE_AFTER_RESPONSE", "thread")
if BENCHFORGE_AFTER_RESPONSE not in ("thread", "inline"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"BENCHFORGE_AFTER_RESPONSE must be 'thread' or 'inline', not '{BENCHFORGE_AFTER_RESPONSE}'.")
# The navigation's waiting counts are kept per member until something changes (benchforge.navigation),
# and at the latest this long (a change no signal, request or job reported).
BENCHFORGE_NAV_CACHE_SECONDS = int(os.environ.get("BENCHFORGE_NAV_CACHE_SECONDS", "60"))
# Lists that may be huge count at most this many rows ("10,000+") and page by keyset (benchforge.paging).
BENCHFORGE_LIST_COUNT_CAP = 10_000
BENCHFORGE_MAX_UPLOAD_BYTES = int(os.environ.get("BENCHFORGE_MAX_UPLOAD_BYTES", 50 * MB))  # one image
# Threads an import reads (or downloads) images in: 0 = one per core.
BENCHFORGE_INGEST_THREADS = int(os.environ.get("BENCHFORGE_INGEST_THREADS", "0"))
# Worker processes an import decodes, hashes and writes images in (curation.hashing): unset = one
# per core where there are several; 0 = in the threads above.
BENCHFORGE_INGEST_PROCESSES = (
    int(os.environ["BENCHFORGE_INGEST_PROCESSES"]) if os.environ.get("BENCHFORGE_INGEST_PROCESSES", "").strip() else None
)
BENCHFORGE_MAX_REQUEST_BYTES = int(os.environ.get("BENCHFORGE_MAX_REQUEST_BYTES", 200 * MB))  # one batch of images
BENCHFORGE_MAX_ARCHIVE_BYTES = int(os.environ.get("BENCHFORGE_MAX_ARCHIVE_BYTES", 2048 * MB))  # a zip or URL list
BENCHFORGE_MAX_ARCHIVE_ENTRIES = int(os.environ.get("BENCHFORGE_MAX_ARCHIVE_ENTRIES", "50000"))
BENCHFORGE_MAX_ARCHIVE_UNPACKED_BYTES = int(os.environ.get("BENCHFORGE_MAX_ARCHIVE_UNPACKED_BYTES", 8192 * MB))
BENCHFORGE_MAX_DATA_FILE_BYTES = int(os.environ.get("BENCHFORGE_MAX_DATA_FILE_BYTES", 200 * MB))  # hash lists, metadata
# Media (images, thumbnails, staged uploads) on local disk under MEDIA_ROOT, or in a private
# S3-compatible bucket (BENCHFORGE_MEDIA_STORAGE=s3); checked here, at startup (benchforge.storage).
STORAGES = media_storages(os.environ, spool_bytes=FILE_UPLOAD_MAX_MEMORY_SIZE)
# URL imports: a whole download (redirects included) must finish within this many seconds.
BENCHFORGE_DOWNLOAD_DEADLINE = float(os.environ.get("BENCHFORGE_DOWNLOAD_DEADLINE", "60"))
# A URL-list import waits on the network, not the CPU: it downloads this many images at once,
# at most BENCHFORGE_DOWNLOADS_PER_SITE from one site (host and port), as a browser would.
BENCHFORGE_DOWNLOADS = max(1, int(os.environ.get("BENCHFORGE_DOWNLOADS", "32")))
BENCHFORGE_DOWNLOADS_PER_SITE = max(1, int(os.environ.get("BENCHFORGE_DOWNLOADS_PER_SITE", "6")))
# Addresses people type (URL lists, a benchmark's Label Studio URL) must be public unless allowed.
BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE = env_bool("BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE", False)
BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE = env_bool("BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE", False)

# LLM endpoints (benchforge_harness/llm/ TOML format); API keys stay in the environment.
BENCHFORGE_MODELS = Path(os.environ.get("BENCHFORGE_MODELS", BASE_DIR / "models.toml"))
# Replies are cached where every worker finds them: the database, or Redis (redis://...) when set.
BENCHFORGE_LLM_CACHE_URL = os.environ.get("BENCHFORGE_LLM_CACHE_URL", "")
# max_concurrency holds across workers and hosts through leased slots in this Redis (default: the
# Celery broker when it is Redis); without one (the embedded runtime, one process) per process.
BENCHFORGE_LLM_LIMITER_URL = os.environ.get("BENCHFORGE_LLM_LIMITER_URL") or (
    os.environ.get("CELERY_BROKER_URL", "")
    if os.environ.get("CELERY_BROKER_URL", "").startswith(("redis://", "rediss://"))
    else ""
)
# A dead worker's slots come back after this; live ones renew theirs every third of it.
BENCHFORGE_LLM_SLOT_LEASE_SECONDS = float(os.environ.get("BENCHFORGE_LLM_SLOT_LEASE_SECONDS", "30"))
BENCHFORGE_LLM_REDIS_PREFIX = os.environ.get("BENCHFORGE_LLM_REDIS_PREFIX", "benchforge:llm")

# Background jobs (jobs.runner): on Celery workers when a broker is set; otherwise in a thread
# of the web process (`make run`: a request never waits for an import), or "inline" (tests, CLI).
# "memory://" keeps Celery from ever dialling its default AMQP address by accident.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_ALWAYS_EAGER = not os.environ.get("CELERY_BROKER_URL")
BENCHFORGE_JOB_RUNNER = os.environ.get("BENCHFORGE_JOB_RUNNER") or ("celery" if os.environ.get("CELERY_BROKER_URL") else "thread")
BENCHFORGE_JOB_QUEUE = os.environ.get("BENCHFORGE_JOB_QUEUE", "celery")
# A running job's worker writes a heartbeat this often; a job not heard from for the timeout is
# shown as interrupted (its worker died) and can be resumed.
BENCHFORGE_JOB_HEARTBEAT_SECONDS = float(os.environ.get("BENCHFORGE_JOB_HEARTBEAT_SECONDS", "10"))
BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = float(os.environ.get("BENCHFORGE_JOB_HEARTBEAT_TIMEOUT", "120"))
# A job whose worker was lost is re-queued by the workers' sweeper this many times (each after the
# timeout plus a back-off starting at BENCHFORGE_JOB_RECOVERY_BACKOFF seconds and doubling), then fails.
BENCHFORGE_JOB_MAX_RECOVERIES = max(0, int(os.environ.get("BENCHFORGE_JOB_MAX_RECOVERIES", "3")))
BENCHFORGE_JOB_RECOVERY_BACKOFF = float(os.environ.get("BENCHFORGE_JOB_RECOVERY_BACKOFF", "10"))
# Uploads staged for a job are deleted when it succeeds or is cancelled; a failed job keeps its
# upload (it can be resumed) for this many days.
BENCHFORGE_STAGED_UPLOAD_DAYS = float(os.environ.get("BENCHFORGE_STAGED_UPLOAD_DAYS", "7"))
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "benchforge.auth.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "benchforge.inputs.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        # DRF's throttles, letting requests through (logged) while the shared cache is down.
        "benchforge.throttling.AnonRateThrottle",
        "benchforge.throttling.UserRateThrottle",
        "benchforge.throttling.ScopedRateThrottle",
    ],
    # Client addresses for throttles: X-Forwarded-For only from the trusted proxies.
    "NUM_PROXIES": BENCHFORGE_TRUSTED_PROXIES,
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("BENCHFORGE_API_ANON_RATE", "120/min"),
        "user": os.environ.get("BENCHFORGE_API_USER_RATE", "6000/min"),
        "login": os.environ.get("BENCHFORGE_API_LOGIN_RATE", "30/min"),
    },
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON only: the browsable API is gone (the docs pages at /api/docs/ replace it).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "benchforge.negotiation.JsonUnlessAsked",
    "EXCEPTION_HANDLER": "benchforge.api.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "benchforge API",
    "DESCRIPTION": "Build multimodal evaluation benchmarks: taxonomy, images, items, jobs.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and ReDoc come from the drf-spectacular-sidecar package's static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "ItemKindEnum": "annotation.models.Item.Kind",
        "CriterionKindEnum": "annotation.models.Criterion.Kind",
        "RoundKindEnum": "review.models.ReviewRound.Kind",
        "RoundRuleEnum": "review.models.ReviewRound.Rule",
        "VerdictEnum": "review.models.Review.Verdict",
        "ItemStatusEnum": "annotation.workflow.STATUS_CHOICES",
        "BenchmarkLanguageEnum": "curation.models.BENCHMARK_LANGUAGES",
        "RewriteTemplateLanguageEnum": "rewrite.models.PromptTemplate.Language",
        "ReleaseStatusEnum": "exports.models.Release.Status",
        "ScoreStatusEnum": "exports.models.Score.Status",
        "ScoreMethodEnum": "exports.models.Score.Method",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # One line per login otherwise; failures and lockouts are still logged.
    "loggers": {
        "axes": {"level": "WARNING"},
        # httpx (under label-studio-sdk, openai, zai) logs one INFO line per request ("HTTP Request:
        # GET ..."): a Label Studio pull of a thousand tasks would print a thousand. Warnings still show.
        "httpx": {"level": "WARNING"},
        "django.utils.autoreload": {"level": "WARNING"},  # not "Watching for file changes" on every start
        # Django's default config gives its logger a console handler of its own, and the record
        # then reaches the root handler too: every line twice. Here it only propagates to root.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
    },
}
