-- SQL whose answers are known; t-sqlite.sh compares the shell's output
-- with checks.expected.
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, grp INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
INSERT INTO t(name, score, grp) SELECT printf('name%04d', i), i * 1.5, i % 7 FROM n;
SELECT count(*), sum(score), min(name), max(name) FROM t;
SELECT grp, count(*), round(avg(score), 2) FROM t GROUP BY grp ORDER BY grp;
CREATE INDEX t_grp ON t(grp, score);
SELECT name FROM t WHERE grp = 3 AND score > 1400 ORDER BY score DESC LIMIT 3;
SELECT id, score, rank() OVER (PARTITION BY grp ORDER BY score DESC) AS r FROM t WHERE id IN (7, 14, 21, 28) ORDER BY id;
CREATE TABLE u(k INTEGER, v TEXT);
INSERT INTO u VALUES (1, 'one'), (2, 'two'), (3, 'three');
SELECT t.id, u.v FROM t JOIN u ON t.id = u.k ORDER BY t.id;
SELECT json_extract('{"a": [1, 2, {"b": "deep"}]}', '$.a[2].b');
SELECT json_group_array(v) FROM (SELECT v FROM u ORDER BY k);
SELECT upper('sqlite') || '-' || length('repocc') || '-' || substr('abcdef', 2, 3);
SELECT date('2024-02-28', '+2 days'), strftime('%j', '2024-12-31');
SELECT typeof(1), typeof(1.0), typeof('x'), typeof(x'00'), typeof(NULL);
SELECT 9223372036854775807 + 0, -9223372036854775808 - 0, 7 / 2, 7 % 3, 7.0 / 2;
SELECT hex('F'), quote('it''s'), instr('hello', 'll'), replace('aaa', 'a', 'bb');
BEGIN; DELETE FROM t WHERE grp = 0; ROLLBACK;
SELECT count(*) FROM t;
UPDATE t SET score = score * 2 WHERE grp = 1;
SELECT sum(score) FROM t WHERE grp = 1;
SELECT group_concat(name, ',') FROM (SELECT name FROM t ORDER BY id LIMIT 3);
PRAGMA integrity_check;
