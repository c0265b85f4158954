-- Customers of the media proxy (issue 27): their record, the usage events of every proxied
-- operation, and the quotas that bound what a customer may spend of ours.

-- A customer is a signed-in user who asked POST /customers (the host's sign-in does); its id is
-- the user's. Quotas apply to every caller of the proxy, with or without this row: the row only
-- carries a site admin's overrides of the settings' defaults (NULL: the default).
CREATE TABLE customers (
  user_id               text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  -- {"<operation>": n, "*": n}: a day's limit per operation, "*" for the ones not named
  operations_per_day    jsonb CHECK (jsonb_typeof(operations_per_day) = 'object'),
  tasks_in_flight       integer CHECK (tasks_in_flight >= 0),
  upload_bytes_per_day  bigint CHECK (upload_bytes_per_day >= 0)
);

-- One row per proxied operation (written in batches: Customers/Usage.ts). `units` counts in the
-- operation's documented unit (docs/api.md: one task, bytes of an upload).
CREATE TABLE usage_events (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id  text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  api_key_id   uuid,
  operation    text NOT NULL,
  outcome      text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'refused')),
  bytes_in     bigint NOT NULL DEFAULT 0,
  bytes_out    bigint NOT NULL DEFAULT 0,
  duration_ms  integer NOT NULL DEFAULT 0,
  units        bigint NOT NULL DEFAULT 0,
  at           timestamptz NOT NULL DEFAULT now()
);
-- a customer's page of events, newest first, optionally of one operation
CREATE INDEX usage_events_customer ON usage_events (customer_id, at DESC, id DESC);

-- What a customer used of a day's quota (UTC days): operations counted one per start, uploads in
-- bytes under the operation 'media-upload'. A refunded start (the vendor call failed) is taken back.
CREATE TABLE quota_days (
  customer_id  text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  day          date NOT NULL,
  operation    text NOT NULL,
  used         bigint NOT NULL CHECK (used >= 0),
  PRIMARY KEY (customer_id, day, operation)
);

-- A task in flight holds one row: from before its vendor call until the task is COMPLETED or
-- FAILED (an image task: bound to it once recorded, deleted by the trigger below whichever path,
-- poll or callback, finishes it) or its stream ends (music). A hold outlives a crash, or a task
-- nobody polls, only until `expires_at`.
CREATE TABLE quota_holds (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  customer_id  text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  operation    text NOT NULL,
  task_id      uuid,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX quota_holds_customer ON quota_holds (customer_id, expires_at);
CREATE INDEX quota_holds_task ON quota_holds (task_id) WHERE task_id IS NOT NULL;

CREATE FUNCTION quota_release_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM quota_holds WHERE task_id = NEW.id;
  RETURN NULL;
END $$;

CREATE TRIGGER media_tasks_finished AFTER UPDATE OF status ON media_tasks
  FOR EACH ROW WHEN (NEW.status IN ('COMPLETED', 'FAILED') AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION quota_release_finished();

-- Takes `amount` of a customer's quotas for `operation`, or refuses, in one statement: the
-- customer's reservations are serialised by an advisory lock for the transaction, and each
-- statement after it sees what the one before committed (READ COMMITTED takes a snapshot per
-- statement in PL/pgSQL), so concurrent starts on any instance never pass a limit.
-- A NULL limit is no limit. With `hold_seconds`, one task in flight is held (its id returned).
-- Answers the limits that applied, what was used of them and, when refused, which one.
CREATE FUNCTION quota_take(
  p_customer text, p_operation text, p_amount bigint,
  p_day_limit bigint, p_flight_limit integer, p_hold_seconds integer
) RETURNS TABLE (refused text, day_limit bigint, day_used bigint, flight_limit integer, flight_used integer, hold_id uuid, day_reset_seconds integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_row customers%ROWTYPE;
  v_day date := (now() AT TIME ZONE 'UTC')::date;
  v_reset integer := ceil(extract(epoch FROM ((v_day + 1)::timestamp AT TIME ZONE 'UTC') - now()))::integer;
BEGIN
  -- the take's commit does not wait for the disk: the start's task record, committed after the
  -- vendor call, flushes this WAL with its own, so only a take whose start never got that far can
  -- be lost in a crash of PostgreSQL (measured: a waited-for commit cost a start milliseconds)
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(hashtextextended('quota:' || p_customer, 0));
  SELECT * INTO v_row FROM customers WHERE user_id = p_customer;
  day_limit := p_day_limit;
  IF p_operation = 'media-upload' THEN
    day_limit := coalesce(v_row.upload_bytes_per_day, p_day_limit);
  ELSIF v_row.operations_per_day IS NOT NULL THEN
    day_limit := coalesce((v_row.operations_per_day ->> p_operation)::bigint, (v_row.operations_per_day ->> '*')::bigint, p_day_limit);
  END IF;
  flight_limit := CASE WHEN p_hold_seconds IS NULL THEN NULL ELSE coalesce(v_row.tasks_in_flight, p_flight_limit) END;
  day_reset_seconds := v_reset;
  SELECT coalesce(q.used, 0) INTO day_used FROM (SELECT 1) one
    LEFT JOIN quota_days q ON q.customer_id = p_customer AND q.day = v_day AND q.operation = p_operation;
  -- holds of tasks nobody saw finish expire: dropped here, under the customer's lock, so that
  -- they neither count nor pile up
  DELETE FROM quota_holds h WHERE h.customer_id = p_customer AND h.expires_at <= now();
  IF flight_limit IS NOT NULL THEN
    SELECT count(*) INTO flight_used FROM quota_holds h WHERE h.customer_id = p_customer;
  ELSE
    flight_used := 0;
  END IF;
  IF day_limit IS NOT NULL AND day_used + p_amount > day_limit THEN
    refused := 'day';
  ELSIF flight_limit IS NOT NULL AND flight_used >= flight_limit THEN
    refused := 'flight';
  ELSE
    INSERT INTO quota_days AS q (customer_id, day, operation, used) VALUES (p_customer, v_day, p_operation, p_amount)
      ON CONFLICT (customer_id, day, operation) DO UPDATE SET used = q.used + p_amount;
    day_used := day_used + p_amount;
    IF p_hold_seconds IS NOT NULL THEN
      INSERT INTO quota_holds (customer_id, operation, expires_at)
        VALUES (p_customer, p_operation, now() + make_interval(secs => p_hold_seconds)) RETURNING id INTO hold_id;
      flight_used := flight_used + 1;
    END IF;
  END IF;
  RETURN NEXT;
END $$;

-- Binds a start's hold to its recorded task (to count until the task finishes, or `horizon`
-- seconds), or ends it when the task has already finished; its commit does not wait for the disk
-- either (a lost bind leaves the hold to expire with its start's timeout).
CREATE FUNCTION quota_bind(p_hold uuid, p_task uuid, p_horizon_seconds integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE quota_holds SET task_id = p_task, expires_at = now() + make_interval(secs => p_horizon_seconds)
    WHERE id = p_hold AND EXISTS (SELECT 1 FROM media_tasks WHERE id = p_task AND status IN ('CREATED', 'IN_PROGRESS'));
  IF NOT FOUND THEN
    DELETE FROM quota_holds WHERE id = p_hold;
  END IF;
END $$;

