# lib-mail/local.mk — the protocol layer between lib/ (general: loop,
# buffers, config, log, TLS) and the tiers: what more than one tier would
# otherwise write, one copy each. Includes lib/ only; names no tier.
noinst_LIBRARIES += lib-mail/libmtmail.a

lib_mail_libmtmail_a_SOURCES = \
	lib-mail/conn.c lib-mail/conn.h \
	lib-mail/command-find.c lib-mail/command-find.h \
	lib-mail/command.c lib-mail/command.h \
	lib-mail/command-metrics.c lib-mail/command-metrics.h \
	lib-mail/conn-metrics.c lib-mail/conn-metrics.h \
	lib-mail/smtp-reply.c lib-mail/smtp-reply.h \
	lib-mail/smtp-params.c lib-mail/smtp-params.h \
	lib-mail/smtp-content.c lib-mail/smtp-content.h \
	lib-mail/smtpd.c lib-mail/smtpd-content.c lib-mail/smtpd.h \
	lib-mail/pop3-status.c lib-mail/pop3-status.h \
	lib-mail/pop3-login.c lib-mail/pop3-login.h \
	lib-mail/imap-parse.c lib-mail/imap-parse.h \
	lib-mail/imap-write.c lib-mail/imap-write.h \
	lib-mail/imap-utf7.c lib-mail/imap-utf7.h \
	lib-mail/imap-mailbox.c lib-mail/imap-mailbox.h \
	lib-mail/imap-date.c lib-mail/imap-date.h \
	lib-mail/imap-login.c lib-mail/imap-login.h \
	lib-mail/imap-search.c lib-mail/imap-search.h \
	lib-mail/imap-sort.c lib-mail/imap-sort.h \
	lib-mail/imap-thread.c lib-mail/imap-thread.h \
	lib-mail/mime-address.c lib-mail/mime-address.h \
	lib-mail/mime-scan.c lib-mail/mime-scan.h \
	lib-mail/imap-bodystructure.c lib-mail/imap-bodystructure.h \
	lib-mail/mime-decode.c lib-mail/mime-decode.h \
	lib-mail/milter-proto.c lib-mail/milter-proto.h \
	lib-mail/milter-client.c lib-mail/milter-client.h \
	lib-mail/sieve-parse.c lib-mail/sieve-parse.h \
	lib-mail/sieve-check.c lib-mail/sieve-check.h \
	lib-mail/sieve-match.c lib-mail/sieve-match.h \
	lib-mail/sieve-run.c lib-mail/sieve-run.h

# What a program linking lib-mail needs (before MAILTIER_LIBS).
MTMAIL_LIBS = lib-mail/libmtmail.a $(MAILTIER_LIBS)

lib_mail_unit_tests = tests/unit/test-smtp-reply tests/unit/test-command-find \
	tests/unit/test-command \
	tests/unit/test-smtp-params tests/unit/test-pop3-login tests/unit/test-conn \
	tests/unit/test-smtpd tests/unit/test-imap-parse \
	tests/unit/test-imap-write tests/unit/test-imap-mailbox \
	tests/unit/test-imap-date tests/unit/test-imap-login \
	tests/unit/test-imap-search tests/unit/test-imap-sort \
	tests/unit/test-imap-thread \
	tests/unit/test-mime-address \
	tests/unit/test-mime-scan tests/unit/test-mime-decode \
	tests/unit/test-milter-proto tests/unit/test-milter-client \
	tests/unit/test-sieve-parse tests/unit/test-sieve-check \
	tests/unit/test-sieve-match tests/unit/test-sieve-run
check_PROGRAMS += $(lib_mail_unit_tests)
TESTS += $(lib_mail_unit_tests)
tests_unit_test_smtp_reply_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_command_find_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_command_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_smtp_params_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_pop3_login_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_conn_SOURCES = tests/unit/test-conn.c tests/unit/test-peer.h
tests_unit_test_conn_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_smtpd_SOURCES = tests/unit/test-smtpd.c tests/unit/test-peer.h
tests_unit_test_smtpd_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_parse_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_write_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_mailbox_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_date_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_login_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_search_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_sort_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_imap_thread_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mime_address_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mime_scan_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mime_decode_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_milter_proto_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_milter_client_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_sieve_parse_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_sieve_check_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_sieve_match_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
tests_unit_test_sieve_run_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)
