-- The registry's records. Enumerations are stored as the interface's exact strings.

CREATE FUNCTION lower_array(text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT coalesce(array_agg(lower(x)), '{}') FROM unnest($1) AS x $$;

-- timestamps leave the service as ISO 8601 with Z and milliseconds
CREATE FUNCTION iso_time(timestamptz) RETURNS text
  LANGUAGE sql STABLE STRICT PARALLEL SAFE
  AS $$ SELECT to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE TABLE users (
  id            text PRIMARY KEY,
  email         text,
  name          text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);

-- ids compare byte-wise (COLLATE "C") whatever the database's locale: orders and pages are stable
CREATE TABLE publishers (
  id                text COLLATE "C" PRIMARY KEY,
  name              text,
  description       text,
  logo              text,
  website           text,
  support           text,
  source_code_repo  text,
  status            text NOT NULL DEFAULT 'PublisherStatusActive'
                    CHECK (status IN ('PublisherStatusActive', 'PublisherStatusBanned')),
  created_at        timestamptz NOT NULL DEFAULT now()
);

-- Nodes nobody has claimed yet belong to this reserved publisher.
INSERT INTO publishers (id, name, description)
VALUES ('unclaimed', 'Unclaimed', 'Nodes waiting for their authors to claim them');

CREATE TABLE publisher_members (
  publisher_id  text COLLATE "C" NOT NULL REFERENCES publishers (id) ON DELETE CASCADE,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role          text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (publisher_id, user_id)
);
CREATE INDEX publisher_members_user ON publisher_members (user_id);

CREATE TABLE nodes (
  id                               text COLLATE "C" PRIMARY KEY,
  publisher_id                     text COLLATE "C" NOT NULL REFERENCES publishers (id),
  name                             text COLLATE "C",
  description                      text,
  author                           text,
  license                          text,
  icon                             text,
  banner_url                       text,
  category                         text,
  repository                       text,
  repohost_stars                   integer NOT NULL DEFAULT 0,
  downloads                        bigint NOT NULL DEFAULT 0,
  rating                           double precision,
  search_ranking                   integer,
  status                           text NOT NULL DEFAULT 'NodeStatusActive'
                                   CHECK (status IN ('NodeStatusActive', 'NodeStatusDeleted', 'NodeStatusBanned')),
  status_detail                    text,
  supported_os                     text[] NOT NULL DEFAULT '{}',
  supported_accelerators           text[] NOT NULL DEFAULT '{}',
  supported_host_version           text,
  supported_host_frontend_version  text,
  tags                             text[] NOT NULL DEFAULT '{}',
  tags_admin                       text[] NOT NULL DEFAULT '{}',
  preempted_host_node_names        text[] NOT NULL DEFAULT '{}',
  translations                     jsonb,
  created_at                       timestamptz NOT NULL DEFAULT now(),
  -- bumped by every change to the node or to one of its versions
  updated_at                       timestamptz NOT NULL DEFAULT now(),
  -- the node appears in public listings: active, and its publisher active
  listed                           boolean NOT NULL DEFAULT true,
  supported_os_lc                  text[] GENERATED ALWAYS AS (lower_array(supported_os)) STORED,
  supported_accelerators_lc        text[] GENERATED ALWAYS AS (lower_array(supported_accelerators)) STORED
);
CREATE INDEX nodes_publisher ON nodes (publisher_id);
CREATE INDEX nodes_default_order ON nodes (search_ranking ASC NULLS LAST, downloads DESC, id) WHERE listed;
-- one index per sortable column and direction, each ending in the id tie-break
CREATE INDEX nodes_created_at ON nodes (created_at, id) WHERE listed;
CREATE INDEX nodes_created_at_desc ON nodes (created_at DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_updated_at ON nodes (updated_at, id) WHERE listed;
CREATE INDEX nodes_updated_at_desc ON nodes (updated_at DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_downloads ON nodes (downloads, id) WHERE listed;
CREATE INDEX nodes_downloads_desc ON nodes (downloads DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_rating ON nodes (rating NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_rating_desc ON nodes (rating DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_name ON nodes (name NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_name_desc ON nodes (name DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_search_ranking ON nodes (search_ranking NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_search_ranking_desc ON nodes (search_ranking DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_repohost_stars ON nodes (repohost_stars, id) WHERE listed;
CREATE INDEX nodes_repohost_stars_desc ON nodes (repohost_stars DESC NULLS LAST, id) WHERE listed;
CREATE INDEX nodes_listed_id ON nodes (id) WHERE listed;
CREATE INDEX nodes_os ON nodes USING gin (supported_os_lc) WHERE listed;
CREATE INDEX nodes_accelerators ON nodes USING gin (supported_accelerators_lc) WHERE listed;

CREATE TABLE node_versions (
  id                               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  node_id                          text COLLATE "C" NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  version                          text NOT NULL,
  -- byte-comparable encoding of the semantic version: ORDER BY gives semver precedence
  semver_key                       text COLLATE "C" NOT NULL,
  changelog                        text,
  dependencies                     text[] NOT NULL DEFAULT '{}',
  deprecated                       boolean NOT NULL DEFAULT false,
  status                           text NOT NULL DEFAULT 'NodeVersionStatusPending'
                                   CHECK (status IN ('NodeVersionStatusActive', 'NodeVersionStatusDeleted',
                                                     'NodeVersionStatusBanned', 'NodeVersionStatusPending',
                                                     'NodeVersionStatusFlagged')),
  status_reason                    text,
  supported_os                     text[] NOT NULL DEFAULT '{}',
  supported_accelerators           text[] NOT NULL DEFAULT '{}',
  supported_host_version           text,
  supported_host_frontend_version  text,
  -- false when supported_host_version is set: admission is then decided by node_version_host_ranges
  admits_any_host                  boolean NOT NULL DEFAULT true,
  tags                             text[] NOT NULL DEFAULT '{}',
  tags_admin                       text[] NOT NULL DEFAULT '{}',
  host_node_extract_status         text,
  created_at                       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (node_id, version)
);
-- the latest active version of a node is the first entry of its range in this index
CREATE INDEX node_versions_latest ON node_versions (node_id, semver_key DESC, version DESC)
  WHERE status = 'NodeVersionStatusActive';

-- supported_host_version of a version as a union of intervals over semver_key (NULL bound: open)
CREATE TABLE node_version_host_ranges (
  version_id  uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  lo          text COLLATE "C",
  lo_incl     boolean NOT NULL,
  hi          text COLLATE "C",
  hi_incl     boolean NOT NULL
);
CREATE INDEX node_version_host_ranges_version ON node_version_host_ranges (version_id);

CREATE TABLE personal_access_tokens (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  publisher_id  text COLLATE "C" NOT NULL REFERENCES publishers (id) ON DELETE CASCADE,
  name          text NOT NULL,
  description   text,
  token_hash    bytea NOT NULL UNIQUE,
  -- the first characters of the token, for telling tokens apart in listings
  token_hint    text NOT NULL,
  created_by    text REFERENCES users (id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX personal_access_tokens_publisher ON personal_access_tokens (publisher_id);

CREATE TABLE host_nodes (
  version_id      uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  host_node_name  text NOT NULL,
  category        text,
  deprecated      boolean,
  description     text,
  experimental    boolean,
  function        text,
  input_types     text,
  output_is_list  boolean[],
  policy          text NOT NULL DEFAULT 'HostNodePolicyActive'
                  CHECK (policy IN ('HostNodePolicyActive', 'HostNodePolicyBanned', 'HostNodePolicyLocalOnly')),
  return_names    text,
  return_types    text,
  PRIMARY KEY (version_id, host_node_name)
);
