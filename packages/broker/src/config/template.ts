// The config.yaml a first start writes into the data dir when there is none: every setting commented out at its
// default, with a line on what it does, so a person finds each one where they would look for it. Nothing in it is
// in force until uncommented. packages/broker/test/config/template.test.ts holds it to the schema: every key the file
// may hold appears here, uncommenting every setting gives a valid file, and each default said here is the one
// compileSettings applies. The tokens and the top-sites ranking stay in their own files.

export const CONFIG_TEMPLATE = `# tabrelay's configuration. Every setting is shown commented out at its default: uncomment a line and change it.
# A running broker applies a change to policy:, users:, read: and bridge: within a second (no restart, no
# session or browser dropped); the others say in its log that they need a restart. A change that does not validate
# is refused with its line and reason (the log, tabrelay doctor, the dashboard) and the running config stays.
# tabrelay policy allow-read HOST and tabrelay policy grant ... edit this file for you, keeping these comments.

# Where the broker listens (the extension dials ws://HOST:PORT/bridge; agents reach http://HOST:PORT/mcp).
# host: 127.0.0.1
# port: 9333

# What agents may read, and where they may act. Read-only unless policy.write grants an action on a host.
# policy:
#   deny:                                  # never read or acted on, whatever else says; path is a regex (default ".*")
#     - { host: "bank.example", path: ".*" }
#   read:
#     enabled: true                        # false: any https page is readable (the deny list still applies)
#     top_sites: 500                       # the N most popular sites (top-sites.csv) are readable over https; 0: none
#     allow:                               # more hosts, each with the path regexes it may be read at
#       "docs.example.com": ["^/guide/"]
#       "127.0.0.1:3000": [".*"]           # a local page: http is readable only for hosts named here
#   write:                                 # actions, each on elements whose visible label matches the regex
#     click: { "shop.example": { label: "^Add to cart$" } }
#     type: { "shop.example": { label: "^Search$" } }
#     keys: { "app.example": { keys: "^Enter$", label: "^Message$" } }   # keys only a page's script gives meaning to
#     upload: { "forms.example": { label: "^Attachment$" } }          # code mode's browse.upload
#     eval: { "app.example": {} }                                      # code mode's browse.eval on that host
#     page_tools: { "https://app.example": { tools: "^(search_orders)$" } }   # which page tools agents may call
#   ask:                                   # ask you instead of refusing a write that has no grant (dashboard, tabrelay ask)
#     timeout_s: 60                        # how long the agent's call waits for your answer (5-600)
#     write: ["shop.example"]              # the sites where you are asked about writes
#     read: ["news.example"]               # ... and about reads outside the allowlist (once: that tab, until it closes)
#     elicit: false                        # also ask through the agent's MCP client (trusts it not to answer for you)

# A team's broker: per-user policy on top of the above (more deny entries, more write grants of the same kinds).
# users:
#   alice:
#     policy:
#       deny: [{ host: "hr.example" }]
#       write: { click: { "crm.example": { label: "^Save$" } } }

# Reading pages.
# read:
#   max_chars: 40000                       # the most read_url / read_page return at once (1000-1000000)
#   load_timeout_ms: 20000                 # how long a page may take to load

# Browsers dialling in.
# bridge:
#   extension_ids: [bkcjhkpmfjmfjkljdlooigoilajjfhpb]   # the tabrelay extensions allowed to pair (the bundled one's id)
#   call_timeout_ms: 30000                 # how long one command in the browser may take

# Tabs: an agent session's lease on a tab ends after this long unused (the tab stays open).
# tabs:
#   lease_idle_minutes: 30

# MCP over HTTP.
# mcp:
#   allowed_origins: []                    # browser origins allowed to call /mcp (CORS); none by default
#   allowed_hosts: []                      # more Host header values accepted (DNS-rebinding defence)
#   trusted_proxies: []                    # load balancers whose X-Forwarded-* headers are believed (addresses, CIDR)
#   session_idle_minutes: 30               # an idle MCP session ends after this long
#   max_sessions: 64
#   max_sessions_per_client: 16

# The audit log (<data dir>/audit.db): every tool call, allowed or refused.
# audit:
#   enabled: true

# Code mode (browser_run): an agent's program in a sandbox, with budgets (defaults, and caps a call may not pass).
# code_mode:
#   enabled: true
#   budgets: { wall_ms: 60000, instructions: 100000, memory_mb: 32, stack_kb: 256, commands: 256, output_kb: 1024 }
#   caps: { wall_ms: 600000, instructions: 10000000, memory_mb: 256, stack_kb: 256, commands: 10000, output_kb: 16384 }
#   allow: []                              # browse commands a program may call (empty: all)
#   deny: []                               # and may not, whatever allow says
#   result_max_chars: 100000               # the most of a run's result that reaches the agent

# Screenshots (off by default: a picture of a page can hold what a read would not show).
# screenshots:
#   enabled: false
#   ttl_seconds: 300                       # how long a screenshot's link works
#   quota_mb: 200                          # on disk, in <data dir>/screenshots
#   max_pixels: 40000000
#   max_mb: 25
#   s3: { bucket: "my-bucket", region: "us-east-1", endpoint: "https://s3.example", force_path_style: false, prefix: "tabrelay/" }

# Web pages offering their own tools to agents (page tools, over /page); none by default.
# pages:
#   allowed_origins: []                    # exact origins, e.g. "https://app.example"
#   webmcp: false                          # also offer WebMCP tools (document.modelContext) of agent tabs
#   call_timeout_ms: 60000
#   token_ttl_seconds: 600

# Browsers the model starts and stops itself (browser_start; browser_run with browser "new"); none by default.
# browsers:
#   source: local                          # local (a headless Chromium), browserbase or kernel
#   max_sessions: 3
#   idle_minutes: 15
#   headless: true                         # local only
#   chromium: /usr/bin/chromium            # local only; default: the one tabrelay finds

# The dashboard's chat panel (the model's key comes from the environment: ANTHROPIC_API_KEY).
# chat:
#   enabled: true
#   model: claude-sonnet-4-5
#   max_steps: 20

# A team's broker: users, tokens and pairings in PostgreSQL instead of <data dir>/store.db (or TABRELAY_POSTGRES_URL).
# store:
#   postgres_url: postgres://USER:PASSWORD@HOST:5432/tabrelay

# Several brokers behind a load balancer (or TABRELAY_REDIS_URL).
# cluster:
#   redis_url: redis://:PASSWORD@HOST:6379
#   broker_id: broker-1

# OAuth 2.1: access tokens from this issuer act as the user with their subject.
# auth:
#   oauth:
#     issuer: https://login.example
#     resource: https://tabrelay.example/mcp
#     jwks_url: https://login.example/.well-known/jwks.json
#     scopes: []
`;
