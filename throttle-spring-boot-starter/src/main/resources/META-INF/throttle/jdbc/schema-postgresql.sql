-- The schema of throttle's jdbc store on PostgreSQL (11 or later): one table and the functions that
-- decide in the database. Safe to run again (it creates what is missing and replaces the functions).
--
-- With throttle.store.jdbc.initialize-schema=always the store runs this script at startup, with
-- every "throttle_" below replaced by throttle.store.jdbc.table-prefix. To manage the schema with
-- Flyway or Liquibase instead, copy this file into a migration (replacing "throttle_" there when you
-- set another prefix) and leave initialize-schema at its default.
--
-- Why functions: a decision is one call, throttle_decide(...), one round trip. It decides on the key's
-- row as last committed and writes only if the row still holds that (a refusal writes nothing); a
-- call that finds the row changed is decided once more on the locked row (SELECT ... FOR UPDATE,
-- after INSERT ... ON CONFLICT DO NOTHING for a key seen the first time), which reads what the
-- previous call wrote: exact under any contention, with no retry loop. It reads the database's clock
-- (clock_timestamp()), never the application's. The algorithms are the PL/pgSQL twins of the Java
-- transitions (dev.throttle.*Policy.Transition) and of the Redis store's Lua scripts
-- (META-INF/throttle/scripts/*.lua), function for function; the store contract suite holds all three
-- equal. The Lua scripts' headers describe each algorithm; here each function says what differs.
--
-- State is integers: each algorithm's part is a bigint[] (the two numbers of "<a>:<b>" in the Lua
-- state, or a sliding log's times), and a row holds its limits' parts each after its length:
-- {len1, part1..., len2, part2...}; a policy of one limit has one part. expires_at (epoch ms, on the
-- database's clock) is when the state is neutral again, as the Lua scripts' PX: an expired row is
-- read as no row, and throttle_purge deletes such rows in small batches.

CREATE TABLE IF NOT EXISTS throttle_state (
    policy_name text NOT NULL,
    limit_key text NOT NULL,
    state bigint[] NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (policy_name, limit_key)
);

CREATE INDEX IF NOT EXISTS throttle_state_expires_at ON throttle_state (expires_at);

-- The policy changes of a fleet (POST /actuator/throttle/{policy}): one row per changed policy, the
-- settings that differ from the configuration as names and values in turn (NULL: reverted to it),
-- numbered from one sequence so that every instance applies the highest number. Instances read the
-- few rows every half second and apply what changed.
CREATE SEQUENCE IF NOT EXISTS throttle_policy_change_version;

CREATE TABLE IF NOT EXISTS throttle_policy_changes (
    policy_name text PRIMARY KEY,
    version bigint NOT NULL,
    settings text[],
    changed_by text NOT NULL,
    changed_at timestamptz NOT NULL
);

-- Stores a change, numbered after every change of the policy stored before it: the number is taken
-- once the policy's row is locked, so two changes of one policy at once are numbered in the order
-- they are stored, and the one stored last has the highest number.
CREATE OR REPLACE FUNCTION throttle_save_policy_change(
    p_policy text, p_settings text[], p_by text, OUT version bigint, OUT changed_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO throttle_policy_changes AS c (policy_name, version, settings, changed_by, changed_at)
        VALUES (p_policy, 0, NULL, p_by, clock_timestamp()) ON CONFLICT (policy_name) DO NOTHING;
    PERFORM 1 FROM throttle_policy_changes AS c WHERE c.policy_name = p_policy FOR UPDATE;
    UPDATE throttle_policy_changes AS c
        SET version = nextval('throttle_policy_change_version'), settings = p_settings, changed_by = p_by,
            changed_at = clock_timestamp()
        WHERE c.policy_name = p_policy
        RETURNING c.version, c.changed_at INTO version, changed_at;
END
$$;

-- The bans of a fleet (throttle.bans): a row per banned key until its end (epoch ms, on the
-- application's clock, as on every store). Instances read the live ones every half second.
CREATE TABLE IF NOT EXISTS throttle_bans (
    ban_name text NOT NULL,
    ban_key text NOT NULL,
    ends_at bigint NOT NULL,
    PRIMARY KEY (ban_name, ban_key)
);

-- The pauses a remote asked of throttled outgoing clients (throttle.clients.*.honor-remote-limits):
-- a row per paused client key until the pause's end (epoch ms, on the database's clock).
CREATE TABLE IF NOT EXISTS throttle_remote_pauses (
    client_name text NOT NULL,
    client_key text NOT NULL,
    paused_until bigint NOT NULL,
    PRIMARY KEY (client_name, client_key)
);

-- floor division, as Lua's floor(a / b) and Java's Math.floorDiv (bigint's / truncates toward zero)
CREATE OR REPLACE FUNCTION throttle_fdiv(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN (a % b <> 0) AND ((a < 0) <> (b < 0)) THEN a / b - 1 ELSE a / b END
$$;

-- Every algorithm function has the shape of one Lua script run on one limit:
--   p        the limit's numbers (Algorithm.numbersOf, the Lua scripts' P)
--   st       the limit's state, or NULL for none
--   op       'a' acquire | 'r' refund | 'p' peek | 'w' reserve (an acquire that may wait for its turn)
--            | 'c' charge (a cost known after the call, into debt); w and c for token-bucket, gcra
--            and fixed-window only, as their Lua twins
--   receipt  a refund's receipt, or NULL for a refund of whichever call (0 names no call); for a
--            reservation the longest wait in ms, for a charge the debt bound in units
-- and answers reply (the six numbers {allowed, limit, remaining, wait, resetAfterMillis, receipt}, a
-- seventh for a reservation: the time until its turn; {} for a refund; {debt} for a charge) and what
-- it writes: w = 0 nothing, 1 new_state for ttl ms, 2 no state.

-- Token bucket (token_bucket.lua). State {used, refilledAt ms}.
CREATE OR REPLACE FUNCTION throttle_token_bucket(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    capacity bigint := p[1];
    refill bigint := p[2];
    period bigint := p[3];
    used bigint;
    refilled_at bigint;
    u bigint := 0;
    at bigint := now;
    periods bigint;
    until_full bigint := 0;
    lft bigint;
    in_use bigint;
    full_at bigint;
    until_full_now bigint := 0;
    until_next bigint := 0;
    until_back bigint;
    debt_paid bigint;
BEGIN
    w := 0;
    IF cardinality(st) = 2 AND st[1] >= 0 AND st[1] < 9007199254740992
            AND st[2] >= now - 549755813888 AND st[2] <= now + 549755813888 THEN
        -- no policy takes more than 2^23 - 1 tokens (the memory store's packed count)
        used := least(st[1], 8388607);
        refilled_at := st[2];
    END IF;
    IF used IS NOT NULL AND used > 0 THEN
        IF now - refilled_at < period THEN
            u := used;
            at := refilled_at;
        ELSE
            periods := (now - refilled_at) / period;
            IF periods < (used + refill - 1) / refill THEN
                u := used - periods * refill;
                at := refilled_at + periods * period;
            END IF;
        END IF;
    END IF;
    IF u > 0 THEN
        until_full := greatest(0, at + ((u + refill - 1) / refill) * period - now);
    END IF;
    IF op = 'a' THEN
        lft := capacity - u;
        IF lft < cost THEN
            reply := ARRAY[0, capacity, greatest(lft, 0),
                at + ((cost - lft + refill - 1) / refill) * period - now, until_full, 0];
            RETURN;
        END IF;
        in_use := u + cost;
        full_at := at + ((in_use + refill - 1) / refill) * period;
        IF in_use > 0 THEN
            until_full_now := greatest(0, full_at - now);
            until_next := at + period - now;
        END IF;
        w := 1;
        new_state := ARRAY[in_use, at];
        ttl := greatest(1, until_full_now);
        reply := ARRAY[1, capacity, greatest(0, capacity - in_use), until_next, until_full_now, greatest(1, full_at)];
    ELSIF op = 'p' THEN
        lft := capacity - u;
        IF lft >= 1 THEN
            reply := ARRAY[1, capacity, lft, CASE WHEN u > 0 THEN at + period - now ELSE 0 END, until_full, 0];
        ELSE
            reply := ARRAY[0, capacity, greatest(lft, 0),
                at + ((1 - lft + refill - 1) / refill) * period - now, until_full, 0];
        END IF;
    ELSIF op = 'r' THEN
        reply := '{}';
        IF used IS NOT NULL THEN
            lft := u - cost;
            IF receipt IS NOT NULL THEN
                until_back := receipt - at;
                IF u <= 0 OR until_back <= 0 THEN
                    -- every token the call took is back already
                    RETURN;
                END IF;
                lft := u - least(cost, ((until_back + period - 1) / period) * refill, u);
            END IF;
            IF lft <= 0 THEN
                w := 2;
            ELSE
                w := 1;
                new_state := ARRAY[lft, at];
                ttl := greatest(1, at + ((lft + refill - 1) / refill) * period - now);
            END IF;
        END IF;
    ELSIF op = 'w' THEN
        -- a reservation takes its tokens now, even those the bucket does not hold yet: the bucket
        -- goes below empty by what the refills up to the call's turn bring (a refusal is an acquire's)
        in_use := u + cost;
        lft := capacity - u;
        IF in_use > capacity THEN
            debt_paid := at + ((in_use - capacity + refill - 1) / refill) * period - now;
            IF in_use > 8388607 OR debt_paid > receipt THEN
                reply := ARRAY[0, capacity, greatest(lft, 0),
                    at + ((cost - lft + refill - 1) / refill) * period - now, until_full, 0];
                RETURN;
            END IF;
        END IF;
        full_at := at + ((in_use + refill - 1) / refill) * period;
        until_full_now := greatest(0, full_at - now);
        w := 1;
        new_state := ARRAY[in_use, at];
        ttl := greatest(1, until_full_now);
        IF in_use <= capacity THEN
            reply := ARRAY[1, capacity, capacity - in_use, at + period - now, until_full_now, greatest(1, full_at), 0];
        ELSE
            reply := ARRAY[1, capacity, 0, at + ((in_use + 1 - capacity + refill - 1) / refill) * period - now,
                until_full_now, greatest(1, full_at), greatest(0, debt_paid)];
        END IF;
    ELSIF op = 'c' THEN
        -- a charge after the call takes its tokens whatever the bucket holds: below empty by at
        -- most the debt bound, which the refills pay back before a call passes
        in_use := greatest(u, least(u + cost, capacity + receipt, 8388607));
        IF in_use <> u THEN
            w := 1;
            new_state := ARRAY[in_use, at];
            ttl := greatest(1, at + ((in_use + refill - 1) / refill) * period - now);
        END IF;
        reply := ARRAY[greatest(0, in_use - capacity)];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- GCRA (gcra.lua). State {TAT in epoch microseconds, the interval it was written under}.
CREATE OR REPLACE FUNCTION throttle_gcra(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    lim bigint := p[1];
    intv bigint := p[2];
    tolerance bigint := p[3];
    now_us bigint := now * 1000;
    tat bigint;
    written bigint := p[2];
    ahead bigint := 0;
    trial bigint;
    r bigint;
    reset bigint;
    back bigint;
    still bigint;
    most bigint;
    charged bigint;
BEGIN
    w := 0;
    IF cardinality(st) = 2 AND st[1] >= now_us - 549755813888000 AND st[1] <= now_us + 549755813888000
            AND st[2] >= 1 AND st[2] < 9007199254740992 THEN
        tat := st[1];
        written := st[2];
    END IF;
    IF tat IS NOT NULL AND tat > now_us THEN
        ahead := tat - now_us;
        IF written <> intv THEN
            -- in doubles, as the Java twin and the Lua script compute it
            ahead := least(ceil(ahead::float8 * intv / written), 549755813888000::float8)::bigint;
        END IF;
        tat := now_us + ahead;
    END IF;
    IF op = 'a' THEN
        trial := ahead + cost * intv;
        IF trial > tolerance THEN
            r := throttle_fdiv(tolerance - ahead, intv);
            reply := ARRAY[0, lim, greatest(r, 0), (trial - tolerance + 999) / 1000, (ahead + 999) / 1000, 0];
            RETURN;
        END IF;
        reset := (trial + 999) / 1000;
        w := 1;
        new_state := ARRAY[now_us + trial, intv];
        ttl := reset;
        r := (tolerance - trial) / intv;
        reply := ARRAY[1, lim, r,
            CASE WHEN r >= lim THEN 0 ELSE (trial + (r + 1) * intv - tolerance + 999) / 1000 END,
            reset, greatest(1, now_us + trial)];
    ELSIF op = 'p' THEN
        IF ahead + intv <= tolerance THEN
            r := (tolerance - ahead) / intv;
            reply := ARRAY[1, lim, r,
                CASE WHEN r >= lim THEN 0 ELSE (ahead + (r + 1) * intv - tolerance + 999) / 1000 END,
                (ahead + 999) / 1000, 0];
        ELSE
            r := throttle_fdiv(tolerance - ahead, intv);
            reply := ARRAY[0, lim, greatest(r, 0), (ahead + intv - tolerance + 999) / 1000, (ahead + 999) / 1000, 0];
        END IF;
    ELSIF op = 'r' THEN
        reply := '{}';
        IF tat IS NOT NULL THEN
            back := tat - cost * intv;
            IF receipt IS NOT NULL THEN
                -- not clipped at the TAT: earlier refunds moved it back without moving later receipts
                still := least(receipt - greatest(receipt - cost * intv, now_us), tat - now_us);
                IF still <= 0 THEN
                    RETURN;
                END IF;
                back := tat - still;
            END IF;
            IF back <= now_us THEN
                w := 2;
            ELSE
                w := 1;
                new_state := ARRAY[back, intv];
                ttl := (back - now_us + 999) / 1000;
            END IF;
        END IF;
    ELSIF op = 'w' THEN
        -- a reservation moves the score as an acquire does; its turn is when its trial score is back
        -- within the tolerance, let in when that is within the longest wait (a refusal is an acquire's)
        trial := ahead + cost * intv;
        IF trial - tolerance > receipt * 1000 THEN
            r := throttle_fdiv(tolerance - ahead, intv);
            reply := ARRAY[0, lim, greatest(r, 0), (trial - tolerance + 999) / 1000, (ahead + 999) / 1000, 0];
            RETURN;
        END IF;
        reset := (trial + 999) / 1000;
        w := 1;
        new_state := ARRAY[now_us + trial, intv];
        ttl := reset;
        r := greatest(throttle_fdiv(tolerance - trial, intv), 0);
        reply := ARRAY[1, lim, r,
            CASE WHEN r >= lim THEN 0 ELSE (trial + (r + 1) * intv - tolerance + 999) / 1000 END,
            reset, greatest(1, now_us + trial),
            CASE WHEN trial > tolerance THEN (trial - tolerance + 999) / 1000 ELSE 0 END];
    ELSIF op = 'c' THEN
        -- a charge after the call moves the score forward whatever the tolerance, beyond it by at
        -- most the debt bound's intervals (in bigints that cannot overflow, as the Java twin)
        most := least(tolerance + least(receipt, 549755813888000 / intv) * intv, 549755813888000);
        charged := ahead;
        IF most > ahead THEN
            charged := ahead + least(most - ahead, least(cost, (most - ahead) / intv + 1) * intv);
            w := 1;
            new_state := ARRAY[now_us + charged, intv];
            ttl := (charged + 999) / 1000;
        END IF;
        reply := ARRAY[CASE WHEN charged > tolerance THEN (charged - tolerance + intv - 1) / intv ELSE 0 END];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- Fixed window (fixed_window.lua). State {count, windowStart ms}; or {next count, windowStart ms, 1}:
-- the window is full and the next one holds reservations (or a debt carried into it).
-- The end of the calendar window holding t (a window's start, usually): the first of the six
-- boundaries b after it; past the last, a window as long as the last one (fixed_window_calendar.lua).
CREATE OR REPLACE FUNCTION throttle_calendar_end(b bigint[], t bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    FOR j IN 1..6 LOOP
        IF b[j] > t THEN
            RETURN b[j];
        END IF;
    END LOOP;
    RETURN t + (b[6] - b[5]);
END
$$;

-- Fixed window of the calendar (fixed_window_calendar.lua): throttle_fixed_window for windows that
-- start at the calendar's boundaries. p = {limit, 0, b1..b6}: the boundaries around the application's
-- time (FixedWindowPolicy.boundaries), sent with each call because a zone's rules live in the JVM's
-- time-zone data; the function still decides on the database's clock, picking among them the window
-- that holds its own now, and fails rather than guess when now is not among them (the clocks differ
-- by more than a window). State as throttle_fixed_window's.
CREATE OR REPLACE FUNCTION throttle_fixed_window_calendar(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    lim bigint := p[1];
    b bigint[] := p[3:8];
    now_start bigint;
    cnt bigint;
    start bigint;
    nxt bigint;
    ended bigint;
    c bigint;
    s bigint;
    ends bigint;
    until_end bigint;
    next_start bigint;
    until_next bigint;
    until_after bigint;
    more bigint;
    total bigint;
    carry bigint;
BEGIN
    w := 0;
    IF cardinality(b) <> 6 OR NOT (now >= b[2] AND now < b[5]) THEN
        RAISE EXCEPTION 'throttle: the calendar window of time % is not among those the application sent (%):'
            ' its clock and the database''s differ by more than a window', now, b;
    END IF;
    now_start := CASE WHEN now >= b[4] THEN b[4] WHEN now >= b[3] THEN b[3] ELSE b[2] END;
    IF cardinality(st) IN (2, 3) AND st[1] >= 0 AND st[1] < 9007199254740992
            AND st[2] >= now - 549755813888 AND st[2] <= now + 549755813888 THEN
        IF cardinality(st) = 3 THEN
            IF st[3] = 1 THEN
                nxt := st[1];
                start := st[2];
                ended := throttle_calendar_end(b, start);
                IF now >= ended THEN
                    -- the full window ended: the next one is the current one, with its reservations
                    cnt := nxt;
                    start := ended;
                    nxt := NULL;
                END IF;
            END IF;
        ELSE
            cnt := st[1];
            start := st[2];
        END IF;
        IF cnt IS NOT NULL AND now >= throttle_calendar_end(b, start) THEN
            cnt := NULL;
            start := NULL;
        END IF;
    END IF;
    IF nxt IS NOT NULL THEN
        -- the current window is full; the next holds nxt reservations
        next_start := throttle_calendar_end(b, start);
        until_next := next_start - now;
        until_after := throttle_calendar_end(b, next_start) - now;
        IF op = 'a' OR op = 'p' THEN
            c := CASE WHEN op = 'a' THEN cost ELSE 1 END;
            reply := ARRAY[0, lim, 0, CASE WHEN nxt + c <= lim THEN until_next ELSE until_after END, until_after, 0];
        ELSIF op = 'w' THEN
            IF nxt + cost > lim OR until_next > receipt THEN
                reply := ARRAY[0, lim, 0, CASE WHEN nxt + cost <= lim THEN until_next ELSE until_after END,
                    until_after, 0];
                RETURN;
            END IF;
            w := 1;
            new_state := ARRAY[nxt + cost, start, 1];
            ttl := until_after;
            reply := ARRAY[1, lim, 0, CASE WHEN nxt + cost < lim THEN until_next ELSE until_after END, until_after,
                greatest(1, next_start), until_next];
        ELSIF op = 'c' THEN
            -- a debt is carried into the next window only, at most the bound and its limit
            more := greatest(nxt, least(nxt + cost, receipt, lim));
            IF more <> nxt THEN
                w := 1;
                new_state := ARRAY[more, start, 1];
                ttl := until_after;
            END IF;
            reply := ARRAY[more];
        ELSIF op = 'r' THEN
            reply := '{}';
            IF receipt IS NOT NULL AND greatest(1, next_start) <> receipt THEN
                -- a call of the full current window: nothing back while the next one holds reservations
                RETURN;
            END IF;
            w := 1;
            IF nxt <= cost THEN
                new_state := ARRAY[lim, start];
                ttl := until_next;
            ELSE
                new_state := ARRAY[nxt - cost, start, 1];
                ttl := until_after;
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown operation %', op;
        END IF;
        RETURN;
    END IF;
    IF op = 'a' THEN
        c := coalesce(cnt, 0);
        s := coalesce(start, now_start);
        until_end := throttle_calendar_end(b, s) - now;
        IF c + cost > lim THEN
            reply := ARRAY[0, lim, greatest(lim - c, 0), until_end, until_end, 0];
            RETURN;
        END IF;
        w := 1;
        new_state := ARRAY[c + cost, s];
        ttl := until_end;
        reply := ARRAY[1, lim, greatest(0, lim - (c + cost)), until_end, until_end, greatest(1, s)];
    ELSIF op = 'p' THEN
        IF cnt IS NULL THEN
            reply := ARRAY[1, lim, lim, 0, 0, 0];
            RETURN;
        END IF;
        until_end := throttle_calendar_end(b, start) - now;
        IF cnt < lim THEN
            reply := ARRAY[1, lim, lim - cnt, until_end, until_end, 0];
        ELSE
            reply := ARRAY[0, lim, greatest(lim - cnt, 0), until_end, until_end, 0];
        END IF;
    ELSIF op = 'r' THEN
        reply := '{}';
        IF receipt IS NOT NULL AND (cnt IS NULL OR greatest(1, start) <> receipt) THEN
            -- the call's window has ended: what it took went with it
            RETURN;
        END IF;
        IF cnt IS NULL OR cnt <= cost THEN
            w := 2;
        ELSE
            w := 1;
            new_state := ARRAY[cnt - cost, start];
            ttl := throttle_calendar_end(b, start) - now;
        END IF;
    ELSIF op = 'w' THEN
        c := coalesce(cnt, 0);
        s := coalesce(start, now_start);
        ends := throttle_calendar_end(b, s);
        until_end := ends - now;
        IF c + cost <= lim THEN
            w := 1;
            new_state := ARRAY[c + cost, s];
            ttl := until_end;
            reply := ARRAY[1, lim, greatest(0, lim - (c + cost)), until_end, until_end, greatest(1, s), 0];
            RETURN;
        END IF;
        IF until_end > receipt THEN
            reply := ARRAY[0, lim, greatest(lim - c, 0), until_end, until_end, 0];
            RETURN;
        END IF;
        -- let into the next window, which starts when this one ends; this one counts as full
        until_after := throttle_calendar_end(b, ends) - now;
        w := 1;
        new_state := ARRAY[cost, s, 1];
        ttl := until_after;
        reply := ARRAY[1, lim, 0, CASE WHEN cost < lim THEN until_end ELSE until_after END, until_after,
            greatest(1, ends), until_end];
    ELSIF op = 'c' THEN
        -- a charge after the call counts in the current window; what does not fit is carried into
        -- the next window as reservations are, at most the debt bound and the next window's limit
        c := coalesce(cnt, 0);
        s := coalesce(start, now_start);
        ends := throttle_calendar_end(b, s);
        until_end := ends - now;
        total := c + cost;
        w := 1;
        IF total <= lim THEN
            new_state := ARRAY[total, s];
            ttl := until_end;
            reply := ARRAY[0];
            RETURN;
        END IF;
        carry := least(total - greatest(c, lim), receipt, lim);
        IF carry <= 0 THEN
            new_state := ARRAY[greatest(c, lim), s];
            ttl := until_end;
            reply := ARRAY[0];
            RETURN;
        END IF;
        new_state := ARRAY[carry, s, 1];
        ttl := throttle_calendar_end(b, ends) - now;
        reply := ARRAY[carry];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION throttle_fixed_window(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    lim bigint := p[1];
    win bigint := p[2];
    cnt bigint;
    start bigint;
    nxt bigint;
    c bigint;
    s bigint;
    until_end bigint;
    until_next bigint;
    until_after bigint;
    more bigint;
    total bigint;
    carry bigint;
BEGIN
    IF win = 0 AND cardinality(p) = 8 THEN
        -- a window of the calendar, whose boundaries came with the numbers
        SELECT x.reply, x.w, x.new_state, x.ttl INTO reply, w, new_state, ttl
            FROM throttle_fixed_window_calendar(p, st, op, cost, now, receipt) AS x;
        RETURN;
    END IF;
    w := 0;
    IF cardinality(st) IN (2, 3) AND st[1] >= 0 AND st[1] < 9007199254740992
            AND st[2] >= now - 549755813888 AND st[2] <= now + 549755813888 THEN
        IF cardinality(st) = 3 THEN
            IF st[3] = 1 AND now - st[2] < win THEN
                nxt := st[1];
                start := st[2];
            ELSIF st[3] = 1 THEN
                -- the full window ended: the next one is the current one, with its reservations
                cnt := st[1];
                start := st[2] + win;
            END IF;
        ELSE
            cnt := st[1];
            start := st[2];
        END IF;
        IF cnt IS NOT NULL AND now - start >= win THEN
            cnt := NULL;
            start := NULL;
        END IF;
    END IF;
    IF nxt IS NOT NULL THEN
        -- the current window is full; the next holds nxt reservations
        until_next := start + win - now;
        until_after := until_next + win;
        IF op = 'a' OR op = 'p' THEN
            c := CASE WHEN op = 'a' THEN cost ELSE 1 END;
            reply := ARRAY[0, lim, 0, CASE WHEN nxt + c <= lim THEN until_next ELSE until_after END, until_after, 0];
        ELSIF op = 'w' THEN
            IF nxt + cost > lim OR until_next > receipt THEN
                reply := ARRAY[0, lim, 0, CASE WHEN nxt + cost <= lim THEN until_next ELSE until_after END,
                    until_after, 0];
                RETURN;
            END IF;
            w := 1;
            new_state := ARRAY[nxt + cost, start, 1];
            ttl := until_after;
            reply := ARRAY[1, lim, 0, CASE WHEN nxt + cost < lim THEN until_next ELSE until_after END, until_after,
                greatest(1, start + win), until_next];
        ELSIF op = 'c' THEN
            -- a debt is carried into the next window only, at most the bound and its limit
            more := greatest(nxt, least(nxt + cost, receipt, lim));
            IF more <> nxt THEN
                w := 1;
                new_state := ARRAY[more, start, 1];
                ttl := until_after;
            END IF;
            reply := ARRAY[more];
        ELSIF op = 'r' THEN
            reply := '{}';
            IF receipt IS NOT NULL AND greatest(1, start + win) <> receipt THEN
                -- a call of the full current window: nothing back while the next one holds reservations
                RETURN;
            END IF;
            w := 1;
            IF nxt <= cost THEN
                new_state := ARRAY[lim, start];
                ttl := until_next;
            ELSE
                new_state := ARRAY[nxt - cost, start, 1];
                ttl := until_after;
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown operation %', op;
        END IF;
        RETURN;
    END IF;
    IF op = 'a' THEN
        c := coalesce(cnt, 0);
        s := coalesce(start, now);
        until_end := s + win - now;
        IF c + cost > lim THEN
            reply := ARRAY[0, lim, greatest(lim - c, 0), until_end, until_end, 0];
            RETURN;
        END IF;
        w := 1;
        new_state := ARRAY[c + cost, s];
        ttl := until_end;
        reply := ARRAY[1, lim, greatest(0, lim - (c + cost)), until_end, until_end, greatest(1, s)];
    ELSIF op = 'p' THEN
        IF cnt IS NULL THEN
            reply := ARRAY[1, lim, lim, 0, 0, 0];
            RETURN;
        END IF;
        until_end := start + win - now;
        IF cnt < lim THEN
            reply := ARRAY[1, lim, lim - cnt, until_end, until_end, 0];
        ELSE
            reply := ARRAY[0, lim, greatest(lim - cnt, 0), until_end, until_end, 0];
        END IF;
    ELSIF op = 'r' THEN
        reply := '{}';
        IF receipt IS NOT NULL AND (cnt IS NULL OR greatest(1, start) <> receipt) THEN
            -- the call's window has ended: what it took went with it
            RETURN;
        END IF;
        IF cnt IS NULL OR cnt <= cost THEN
            w := 2;
        ELSE
            w := 1;
            new_state := ARRAY[cnt - cost, start];
            ttl := start + win - now;
        END IF;
    ELSIF op = 'w' THEN
        c := coalesce(cnt, 0);
        s := coalesce(start, now);
        until_end := s + win - now;
        IF c + cost <= lim THEN
            w := 1;
            new_state := ARRAY[c + cost, s];
            ttl := until_end;
            reply := ARRAY[1, lim, greatest(0, lim - (c + cost)), until_end, until_end, greatest(1, s), 0];
            RETURN;
        END IF;
        IF until_end > receipt THEN
            reply := ARRAY[0, lim, greatest(lim - c, 0), until_end, until_end, 0];
            RETURN;
        END IF;
        -- let into the next window, which starts when this one ends; this one counts as full
        w := 1;
        new_state := ARRAY[cost, s, 1];
        ttl := until_end + win;
        reply := ARRAY[1, lim, 0, CASE WHEN cost < lim THEN until_end ELSE until_end + win END, until_end + win,
            greatest(1, s + win), until_end];
    ELSIF op = 'c' THEN
        -- a charge after the call counts in the current window; what does not fit is carried into
        -- the next window as reservations are, at most the debt bound and the next window's limit
        c := coalesce(cnt, 0);
        s := coalesce(start, now);
        until_end := s + win - now;
        total := c + cost;
        w := 1;
        IF total <= lim THEN
            new_state := ARRAY[total, s];
            ttl := until_end;
            reply := ARRAY[0];
            RETURN;
        END IF;
        carry := least(total - greatest(c, lim), receipt, lim);
        IF carry <= 0 THEN
            new_state := ARRAY[greatest(c, lim), s];
            ttl := until_end;
            reply := ARRAY[0];
            RETURN;
        END IF;
        new_state := ARRAY[carry, s, 1];
        ttl := until_end + win;
        reply := ARRAY[carry];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- Escalating lockout (lockout.lua). State {index, lastAllowed ms}; p = {expireAfter, timeouts...}.
CREATE OR REPLACE FUNCTION throttle_lockout(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    expire bigint := p[1];
    last_rung int := cardinality(p) - 2;
    idx int;
    last_allowed bigint;
    nxt int;
    moved bigint;
BEGIN
    w := 0;
    IF cardinality(st) = 2 AND st[1] >= 0 AND st[1] < 9007199254740992
            AND st[2] >= now - 549755813888 AND st[2] <= now + 549755813888 AND now - st[2] < expire THEN
        -- one written under a longer ladder stands on this ladder's top rung
        idx := least(st[1], last_rung);
        last_allowed := st[2];
    END IF;
    IF op = 'a' THEN
        IF idx IS NULL THEN
            w := 1;
            new_state := ARRAY[0, now];
            ttl := expire;
            reply := ARRAY[1, 1, 0, p[2], expire, greatest(1, now)];
            RETURN;
        END IF;
        IF now - last_allowed < p[2 + idx] THEN
            reply := ARRAY[0, 1, 0, last_allowed + p[2 + idx] - now, last_allowed + expire - now, 0];
            RETURN;
        END IF;
        nxt := least(idx + 1, last_rung);
        w := 1;
        new_state := ARRAY[nxt, now];
        ttl := expire;
        reply := ARRAY[1, 1, 0, p[2 + nxt], expire, greatest(1, now)];
    ELSIF op = 'p' THEN
        IF idx IS NULL THEN
            reply := ARRAY[1, 1, 1, 0, 0, 0];
        ELSIF now - last_allowed >= p[2 + idx] THEN
            reply := ARRAY[1, 1, 1, 0, last_allowed + expire - now, 0];
        ELSE
            reply := ARRAY[0, 1, 0, last_allowed + p[2 + idx] - now, last_allowed + expire - now, 0];
        END IF;
    ELSIF op = 'r' THEN
        reply := '{}';
        IF receipt IS NOT NULL AND (idx IS NULL OR greatest(1, last_allowed) <> receipt) THEN
            -- a later attempt came, or the state expired or was reset: the call's rung is not the last
            RETURN;
        END IF;
        IF idx IS NULL OR idx = 0 THEN
            w := 2;
        ELSE
            moved := last_allowed - p[2 + idx - 1];
            IF now - moved >= expire THEN
                w := 2;
            ELSE
                w := 1;
                new_state := ARRAY[idx - 1, moved];
                ttl := moved + expire - now;
            END IF;
        END IF;
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- The sliding log's wait with c live attempts, the newest at last and the oldest live ones in lv
-- (ascending): waitFor of sliding_log.lua. p = {threshold, ttl, maxEntries, delays...}.
CREATE OR REPLACE FUNCTION throttle_sliding_log_wait(p bigint[], c bigint, last bigint, lv bigint[], now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    ttl_ms bigint := p[2];
    ndelays int := cardinality(p) - 3;
    over bigint := c + 1 - p[1];
    best bigint;
    t bigint;
BEGIN
    IF over <= 0 THEN
        RETURN 0;
    END IF;
    best := last + p[3 + least(over, ndelays)];
    FOR k IN 1..over LOOP
        t := lv[k];
        EXIT WHEN t IS NULL OR t + ttl_ms >= best;
        IF over - k <= 0 THEN
            best := t + ttl_ms;
        ELSE
            best := greatest(t + ttl_ms, last + p[3 + least(over - k, ndelays)]);
        END IF;
    END LOOP;
    RETURN greatest(0, best - now);
END
$$;

-- untilNextUnit of sliding_log.lua
CREATE OR REPLACE FUNCTION throttle_sliding_log_next(p bigint[], c bigint, last bigint, lv bigint[], now bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN c = 0 THEN 0
        WHEN c < p[1] THEN lv[1] + p[2] - now
        ELSE throttle_sliding_log_wait(p, c, last, lv, now)
    END
$$;

-- Sliding log with a growing delay (sliding_log.lua). State: the times (epoch ms) of recent allowed
-- attempts, oldest first.
CREATE OR REPLACE FUNCTION throttle_sliding_log(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    threshold bigint := p[1];
    ttl_ms bigint := p[2];
    max_entries bigint := p[3];
    log bigint[] := coalesce(st, '{}');
    n int := coalesce(cardinality(st), 0);
    newest bigint;
    c int := 0;
    lv bigint[];
    at_i int;
    t bigint;
    last bigint;
    wt bigint;
    kept int;
    at bigint;
    next_log bigint[];
BEGIN
    w := 0;
    IF n > 0 THEN
        newest := log[n];
        IF NOT (newest >= now - 549755813888 AND newest <= now + 549755813888) THEN
            n := 0;
        END IF;
    END IF;
    -- the live attempts: the tail younger than ttl (the times ascend)
    IF n > 0 AND now - newest < ttl_ms THEN
        FOR i IN REVERSE n..1 LOOP
            EXIT WHEN now - log[i] >= ttl_ms;
            c := c + 1;
        END LOOP;
    END IF;
    lv := log[n - c + 1:n];
    IF op = 'r' THEN
        reply := '{}';
        IF n = 0 THEN
            RETURN;
        END IF;
        at_i := n;
        IF receipt IS NOT NULL THEN
            -- the newest live attempt with the receipt's time: the times ascend, so search from the end
            at_i := NULL;
            FOR i IN REVERSE n..(n - c + 1) LOOP
                t := log[i];
                EXIT WHEN t < receipt;
                IF greatest(1, t) = receipt THEN
                    at_i := i;
                    EXIT;
                END IF;
            END LOOP;
            IF at_i IS NULL THEN
                RETURN;
            END IF;
        END IF;
        IF n <= 1 THEN
            w := 2;
            RETURN;
        END IF;
        last := CASE WHEN at_i = n THEN log[n - 1] ELSE newest END;
        IF last + ttl_ms - now <= 0 THEN
            w := 2;
        ELSE
            w := 1;
            new_state := log[1:at_i - 1] || log[at_i + 1:n];
            ttl := last + ttl_ms - now;
        END IF;
        RETURN;
    END IF;
    wt := throttle_sliding_log_wait(p, c, newest, lv, now);
    IF op = 'p' THEN
        IF c = 0 THEN
            reply := ARRAY[1, threshold, threshold, 0, 0, 0];
        ELSIF wt > 0 THEN
            reply := ARRAY[0, threshold, 0, wt, newest + ttl_ms - now, 0];
        ELSE
            reply := ARRAY[1, threshold, greatest(0, threshold - c),
                throttle_sliding_log_next(p, c, newest, lv, now), newest + ttl_ms - now, 0];
        END IF;
    ELSIF op = 'a' THEN
        IF wt > 0 THEN
            reply := ARRAY[0, threshold, 0, wt, newest + ttl_ms - now, 0];
            RETURN;
        END IF;
        -- keep the newest min(live, maxEntries - 1) times, then add this attempt
        kept := least(c, max_entries - 1);
        at := CASE WHEN n > 0 THEN greatest(now, newest) ELSE now END;
        next_log := log[n - kept + 1:n] || at;
        w := 1;
        new_state := next_log;
        ttl := at + ttl_ms - now;
        reply := ARRAY[1, threshold, greatest(0, threshold - (kept + 1)),
            throttle_sliding_log_next(p, kept + 1, at, next_log, now), at + ttl_ms - now, greatest(1, at)];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- Concurrency slots (concurrency.lua). State {last id given, ids of the slots held...}, oldest first;
-- p = {limit, leaseMillis, hintMillis}. A slot taken at now gets max(last + 1, now * 1000 + 1), so
-- ids ascend and carry their time (id / 1000); a slot is held while id >= (now - lease + 1) * 1000,
-- so the slots whose lease ran out are a prefix, dropped by the next call that takes a slot. A
-- refund with a receipt frees the slot with that id and nothing else; the last id stays until its
-- lease has passed, so an id is never given twice.
CREATE OR REPLACE FUNCTION throttle_concurrency(
    p bigint[], st bigint[], op text, cost bigint, now bigint, receipt bigint,
    OUT reply bigint[], OUT w int, OUT new_state bigint[], OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    lim bigint := p[1];
    lease bigint := p[2];
    hint_ms bigint := p[3];
    n int := 0;
    last bigint := 0;
    lowest bigint;
    first int;
    live int;
    at_i int;
    id bigint;
    s bigint;
BEGIN
    w := 0;
    -- the list; an id that is not one (only another writer leaves one) counts as no slots
    IF cardinality(st) >= 1 AND st[1] >= 1 AND st[1] < 9007199254740992
            AND st[1] / 1000 <= now + 549755813888 THEN
        last := st[1];
        n := cardinality(st) - 1;
        FOR i IN 2..n + 1 LOOP
            IF NOT (st[i] >= 1 AND st[i] <= last) THEN
                n := 0;
                EXIT;
            END IF;
        END LOOP;
    END IF;
    lowest := (now - lease + 1) * 1000;
    first := 1;
    WHILE first <= n AND st[first + 1] < lowest LOOP
        first := first + 1;
    END LOOP;
    live := n - first + 1;
    IF op = 'r' THEN
        reply := '{}';
        IF n = 0 THEN
            RETURN;
        END IF;
        at_i := NULL;
        IF receipt IS NOT NULL THEN
            FOR i IN REVERSE n..1 LOOP
                s := st[i + 1];
                IF s = receipt THEN
                    at_i := i;
                    EXIT;
                END IF;
                EXIT WHEN s < receipt;
            END LOOP;
        ELSIF live > 0 THEN
            at_i := n;
        END IF;
        IF at_i IS NULL THEN
            RETURN;
        END IF;
        IF throttle_fdiv(last, 1000) + lease - now <= 0 THEN
            w := 2;
        ELSE
            w := 1;
            new_state := st[1:at_i] || st[at_i + 2:n + 1];
            ttl := throttle_fdiv(last, 1000) + lease - now;
        END IF;
        RETURN;
    END IF;
    IF op = 'p' THEN
        IF live = 0 THEN
            reply := ARRAY[1, lim, lim, 0, 0, 0];
        ELSE
            reply := ARRAY[CASE WHEN live < lim THEN 1 ELSE 0 END, lim, greatest(0, lim - live),
                greatest(1, least(hint_ms, throttle_fdiv(st[first + 1], 1000) + lease - now)),
                throttle_fdiv(st[n + 1], 1000) + lease - now, 0];
        END IF;
    ELSIF op IN ('a', 'w') THEN
        IF live + 1 > lim THEN
            reply := ARRAY[0, lim, greatest(0, lim - live),
                greatest(1, least(hint_ms, throttle_fdiv(st[first + 1], 1000) + lease - now)),
                throttle_fdiv(st[n + 1], 1000) + lease - now, 0];
            RETURN;
        END IF;
        id := greatest(last + 1, now * 1000 + 1);
        w := 1;
        new_state := ARRAY[id] || st[first + 1:n + 1] || id;
        ttl := throttle_fdiv(id, 1000) + lease - now;
        reply := ARRAY[1, lim, greatest(0, lim - (live + 1)),
            greatest(1, least(hint_ms, throttle_fdiv(CASE WHEN live > 0 THEN st[first + 1] ELSE id END, 1000)
                + lease - now)),
            ttl, id];
    ELSE
        RAISE EXCEPTION 'unknown operation %', op;
    END IF;
END
$$;

-- One decision, refund or peek of a policy's key: the one call the store makes per operation.
--   p_algorithm  the algorithm's id (token-bucket, gcra, fixed-window, lockout, sliding-log, concurrency)
--   p_limits     each limit's numbers after their count: {len1, numbers1..., len2, numbers2...}
--   p_op         'a' acquire | 'r' refund | 'p' peek | 'w' reserve (one limit) | 'c' charge
--   p_now        epoch ms, or NULL to read the database's clock (tests pass their clock)
--   p_receipts   a refund's receipts, one per limit (0: that limit without one), or NULL; for a
--                reservation {the longest wait in ms}, for a charge {the debt bound in units}
-- Answers the six numbers of each limit in turn (seven for a reservation, {} for a refund, {the
-- largest debt of a limit} for a charge, which every limit takes). Several limits decide as
-- several.lua does: a call is allowed only when every limit allows it, and only then is anything
-- written; on a refusal, the limits that would allow the call answer as a peek.
CREATE OR REPLACE FUNCTION throttle_decide(
    p_policy text, p_key text, p_algorithm text, p_limits bigint[], p_op text, p_cost bigint,
    p_now bigint, p_receipts bigint[])
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    now_ms bigint := coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
    st bigint[];
    expires bigint;
    found_row boolean := false;
    inserted boolean := false;
    nlim int := 0;
    pos int := 1;
    len int;
    lim_at int[] := '{}';
    part_at int[] := '{}';
    ps bigint[];
    part bigint[];
    rcpt bigint;
    res record;
    replies bigint[] := '{}';
    ws int[] := '{}';
    news bigint[] := '{}';
    new_at int[] := '{}';
    new_len int[] := '{}';
    ttls bigint[] := '{}';
    allowed boolean := true;
    whole bigint[] := '{}';
    px bigint := 0;
    kept boolean := false;
    any_write boolean := false;
    any_state boolean := false;
    plen int;
    locked boolean := p_op NOT IN ('a', 'w');
    read_st bigint[];
    read_expires bigint;
    written boolean;
BEGIN
    -- An acquire or a reservation is first decided on the key's row read without a lock: a refusal
    -- writes nothing, so it is answered from that read (a decision as of the last write committed),
    -- without the row lock and the commit's WAL flush that a lock costs; a key flooded with calls it
    -- refuses then costs the database reads. A call the read allows writes its new state only if
    -- the row still holds what was read (the UPDATE locks the row and checks it again on the latest
    -- version); when another call wrote in between, it is decided again on the locked row, once.
    <<passes>>
    LOOP
    -- the key's row, locked (a peek, and an acquire's first pass, read without a lock)
    IF p_op = 'p' OR NOT locked THEN
        SELECT state, expires_at INTO st, expires FROM throttle_state
            WHERE policy_name = p_policy AND limit_key = p_key;
        found_row := FOUND;
    ELSE
        -- at most three turns: a second only when the row was deleted (a reset, a purge) between
        -- the INSERT that found it and the SELECT that would lock it
        found_row := false;
        FOR attempt IN 1..3 LOOP
            SELECT state, expires_at INTO st, expires FROM throttle_state
                WHERE policy_name = p_policy AND limit_key = p_key FOR UPDATE;
            IF FOUND THEN
                found_row := true;
                EXIT;
            END IF;
            -- a refund of a key that holds nothing gives nothing back
            EXIT WHEN p_op = 'r';
            INSERT INTO throttle_state (policy_name, limit_key, state, expires_at)
                VALUES (p_policy, p_key, '{}', 0) ON CONFLICT DO NOTHING;
            IF FOUND THEN
                found_row := true;
                inserted := true;
                st := '{}';
                expires := 0;
                EXIT;
            END IF;
        END LOOP;
        IF NOT found_row AND p_op <> 'r' THEN
            RAISE EXCEPTION 'throttle: the row of a key was deleted three times while being locked';
        END IF;
    END IF;
    read_st := st;
    read_expires := expires;
    IF NOT found_row OR expires <= now_ms THEN
        st := '{}';
    END IF;
    nlim := 0;
    pos := 1;
    lim_at := '{}';
    part_at := '{}';
    replies := '{}';
    ws := '{}';
    news := '{}';
    new_at := '{}';
    new_len := '{}';
    ttls := '{}';
    allowed := true;

    -- where each limit's numbers and each part of the state start
    WHILE pos <= coalesce(cardinality(p_limits), 0) LOOP
        nlim := nlim + 1;
        lim_at := lim_at || pos;
        pos := pos + 1 + p_limits[pos]::int;
    END LOOP;
    pos := 1;
    FOR i IN 1..nlim LOOP
        IF pos <= cardinality(st) AND st[pos] >= 0 AND pos + st[pos] <= cardinality(st) THEN
            part_at := part_at || pos;
            pos := pos + 1 + st[pos]::int;
        ELSE
            -- a part missing (a state written under fewer limits) or unreadable: no state
            part_at := part_at || 0;
            pos := cardinality(st) + 1;
        END IF;
    END LOOP;

    FOR i IN 1..nlim LOOP
        ps := p_limits[lim_at[i] + 1:lim_at[i] + p_limits[lim_at[i]]::int];
        part := NULL;
        IF part_at[i] > 0 AND st[part_at[i]] > 0 THEN
            part := st[part_at[i] + 1:part_at[i] + st[part_at[i]]::int];
        END IF;
        rcpt := NULL;
        IF p_op = 'r' AND cardinality(p_receipts) > 0 THEN
            IF cardinality(p_receipts) <> nlim OR p_receipts[i] = 0 THEN
                -- receipts of other limits than these (a plan with another number of limits), or none for it
                rcpt := NULL;
            ELSIF p_receipts[i] >= 1 AND p_receipts[i] < 9007199254740992 THEN
                rcpt := p_receipts[i];
            ELSE
                rcpt := 0;
            END IF;
        END IF;
        IF p_op IN ('w', 'c') THEN
            rcpt := greatest(coalesce(p_receipts[1], 0), 0);
        END IF;
        CASE p_algorithm
            WHEN 'token-bucket' THEN SELECT * INTO res FROM throttle_token_bucket(ps, part, p_op, p_cost, now_ms, rcpt);
            WHEN 'gcra' THEN SELECT * INTO res FROM throttle_gcra(ps, part, p_op, p_cost, now_ms, rcpt);
            WHEN 'fixed-window' THEN SELECT * INTO res FROM throttle_fixed_window(ps, part, p_op, p_cost, now_ms, rcpt);
            WHEN 'lockout' THEN SELECT * INTO res FROM throttle_lockout(ps, part, p_op, p_cost, now_ms, rcpt);
            WHEN 'sliding-log' THEN SELECT * INTO res FROM throttle_sliding_log(ps, part, p_op, p_cost, now_ms, rcpt);
            WHEN 'concurrency' THEN SELECT * INTO res FROM throttle_concurrency(ps, part, p_op, p_cost, now_ms, rcpt);
            ELSE RAISE EXCEPTION 'throttle: no jdbc twin of algorithm %', p_algorithm;
        END CASE;
        IF p_op IN ('a', 'w') AND res.reply[1] = 0 THEN
            allowed := false;
        END IF;
        replies := replies || res.reply;
        ws := ws || res.w;
        new_at := new_at || (coalesce(cardinality(news), 0) + 1);
        new_len := new_len || coalesce(cardinality(res.new_state), 0);
        news := news || coalesce(res.new_state, '{}');
        ttls := ttls || coalesce(res.ttl, 0);
    END LOOP;

    IF p_op IN ('a', 'w') AND NOT allowed THEN
        -- nothing is written; the limits that would allow the call say what they hold, uncharged
        IF nlim > 1 THEN
            FOR i IN 1..nlim LOOP
                IF replies[6 * (i - 1) + 1] = 1 THEN
                    ps := p_limits[lim_at[i] + 1:lim_at[i] + p_limits[lim_at[i]]::int];
                    part := NULL;
                    IF part_at[i] > 0 AND st[part_at[i]] > 0 THEN
                        part := st[part_at[i] + 1:part_at[i] + st[part_at[i]]::int];
                    END IF;
                    CASE p_algorithm
                        WHEN 'token-bucket' THEN SELECT * INTO res FROM throttle_token_bucket(ps, part, 'p', 1, now_ms, NULL);
                        WHEN 'gcra' THEN SELECT * INTO res FROM throttle_gcra(ps, part, 'p', 1, now_ms, NULL);
                        WHEN 'fixed-window' THEN SELECT * INTO res FROM throttle_fixed_window(ps, part, 'p', 1, now_ms, NULL);
                        WHEN 'lockout' THEN SELECT * INTO res FROM throttle_lockout(ps, part, 'p', 1, now_ms, NULL);
                        ELSE SELECT * INTO res FROM throttle_sliding_log(ps, part, 'p', 1, now_ms, NULL);
                    END CASE;
                    replies[6 * (i - 1) + 1:6 * i] := res.reply;
                END IF;
            END LOOP;
        END IF;
        IF inserted THEN
            DELETE FROM throttle_state WHERE policy_name = p_policy AND limit_key = p_key;
        END IF;
        RETURN replies;
    END IF;

    -- what to write: each limit's new part, or the part it keeps
    whole := '{}';
    px := 0;
    kept := false;
    any_write := false;
    any_state := false;
    IF p_op <> 'p' THEN
        FOR i IN 1..nlim LOOP
            IF ws[i] = 0 THEN
                plen := CASE WHEN part_at[i] > 0 THEN st[part_at[i]]::int ELSE 0 END;
                whole := whole || plen::bigint;
                IF plen > 0 THEN
                    whole := whole || st[part_at[i] + 1:part_at[i] + plen];
                    kept := true;
                END IF;
            ELSIF ws[i] = 2 THEN
                whole := whole || 0::bigint;
                any_write := true;
            ELSE
                whole := whole || new_len[i]::bigint || news[new_at[i]:new_at[i] + new_len[i] - 1];
                px := greatest(px, ttls[i]);
                any_write := true;
                any_state := any_state OR new_len[i] > 0;
            END IF;
        END LOOP;
        IF any_write AND kept THEN
            -- a part left as it was lives as long as the row does now
            px := greatest(px, expires - now_ms);
            any_state := true;
        END IF;
    END IF;
    EXIT passes WHEN locked;

    -- the first pass allowed the call: written only where the row holds what was read
    IF NOT any_write THEN
        written := true;
    ELSIF found_row THEN
        IF NOT any_state THEN
            DELETE FROM throttle_state WHERE policy_name = p_policy AND limit_key = p_key
                AND state = read_st AND expires_at = read_expires;
            written := FOUND;
        ELSIF px > 0 THEN
            UPDATE throttle_state SET state = whole, expires_at = now_ms + px
                WHERE policy_name = p_policy AND limit_key = p_key AND state = read_st AND expires_at = read_expires;
            written := FOUND;
        ELSE
            written := true;
        END IF;
    ELSIF any_state AND px > 0 THEN
        INSERT INTO throttle_state (policy_name, limit_key, state, expires_at)
            VALUES (p_policy, p_key, whole, now_ms + px) ON CONFLICT DO NOTHING;
        written := FOUND;
    ELSE
        written := true;
    END IF;
    EXIT passes WHEN written;
    -- another call wrote the row since it was read: decided again on the locked row
    locked := true;
    END LOOP passes;

    IF locked AND p_op <> 'p' THEN
        IF any_write THEN
            IF NOT any_state THEN
                DELETE FROM throttle_state WHERE policy_name = p_policy AND limit_key = p_key;
            ELSIF px > 0 THEN
                UPDATE throttle_state SET state = whole, expires_at = now_ms + px
                    WHERE policy_name = p_policy AND limit_key = p_key;
            END IF;
        ELSIF inserted THEN
            DELETE FROM throttle_state WHERE policy_name = p_policy AND limit_key = p_key;
        END IF;
    END IF;
    IF p_op = 'r' THEN
        RETURN '{}';
    END IF;
    IF p_op = 'c' THEN
        -- the largest debt of a limit
        RETURN ARRAY[(SELECT max(d) FROM unnest(replies) AS d)];
    END IF;
    RETURN replies;
END
$$;

-- Deletes up to p_batch rows expired on the database's clock, skipping rows a decision holds;
-- answers how many. The store calls it in small batches so that no delete holds many locks long.
CREATE OR REPLACE FUNCTION throttle_purge(p_batch int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    deleted int;
BEGIN
    DELETE FROM throttle_state WHERE ctid IN (
        SELECT ctid FROM throttle_state
        WHERE expires_at < floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
        LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END
$$;
