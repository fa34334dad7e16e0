# tests/fuzz/local.mk — fuzz targets for every parser that sees outside
# bytes (tests/fuzz/README.md). Each tests/fuzz/fuzz-NAME.c is built twice:
#  - with the normal compiler and standalone-main.c as tests/fuzz/fuzz-NAME,
#    run by `make check` over tests/fuzz/corpus/NAME/ (the regression run;
#    under ASan/UBSan in the sanitizer build);
#  - with clang and libFuzzer as tests/fuzz/bin/fuzz-NAME by `make fuzz`
#    (every source it runs compiled with -fsanitize=fuzzer-no-link,address,
#    undefined, so the fuzzer sees coverage); scripts/fuzz runs them.
fuzz_regression_tests = \
	tests/fuzz/fuzz-lineio \
	tests/fuzz/fuzz-dotcodec \
	tests/fuzz/fuzz-address \
	tests/fuzz/fuzz-config \
	tests/fuzz/fuzz-ldap-escape \
	tests/fuzz/fuzz-pwhash \
	tests/fuzz/fuzz-reply \
	tests/fuzz/fuzz-milter-reply \
	tests/fuzz/fuzz-imap-cmd \
	tests/fuzz/fuzz-imap-write \
	tests/fuzz/fuzz-imap-mailbox \
	tests/fuzz/fuzz-imap-date \
	tests/fuzz/fuzz-imap-search \
	tests/fuzz/fuzz-imap-sort \
	tests/fuzz/fuzz-sieve-parse \
	tests/fuzz/fuzz-sieve-match \
	tests/fuzz/fuzz-mime-scan \
	tests/fuzz/fuzz-sasl \
	tests/fuzz/fuzz-smtp-cmd \
	tests/fuzz/fuzz-smtp-data \
	tests/fuzz/fuzz-bounce \
	tests/fuzz/fuzz-pop3-cmd \
	tests/fuzz/fuzz-lmtp-cmd \
	tests/fuzz/fuzz-mmp-cmd \
	tests/fuzz/fuzz-mmp-session \
	tests/fuzz/fuzz-popstore-session \
	tests/fuzz/fuzz-mta-session \
	tests/fuzz/fuzz-imap-response

check_PROGRAMS += $(fuzz_regression_tests)
TESTS += $(fuzz_regression_tests)

fuzz_common = tests/fuzz/standalone-main.c tests/fuzz/fuzz.h
tests_fuzz_fuzz_lineio_SOURCES = tests/fuzz/fuzz-lineio.c $(fuzz_common)
tests_fuzz_fuzz_dotcodec_SOURCES = tests/fuzz/fuzz-dotcodec.c $(fuzz_common)
tests_fuzz_fuzz_address_SOURCES = tests/fuzz/fuzz-address.c $(fuzz_common)
tests_fuzz_fuzz_config_SOURCES = tests/fuzz/fuzz-config.c $(fuzz_common)
tests_fuzz_fuzz_config_LDADD = settings/libmtsettings.a $(UNIT_LIBS)
tests_fuzz_fuzz_ldap_escape_SOURCES = tests/fuzz/fuzz-ldap-escape.c $(fuzz_common)
tests_fuzz_fuzz_ldap_escape_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)
tests_fuzz_fuzz_pwhash_SOURCES = tests/fuzz/fuzz-pwhash.c $(fuzz_common)
tests_fuzz_fuzz_pwhash_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)
tests_fuzz_fuzz_reply_SOURCES = tests/fuzz/fuzz-reply.c $(fuzz_common)
tests_fuzz_fuzz_reply_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_milter_reply_SOURCES = tests/fuzz/fuzz-milter-reply.c $(fuzz_common)
tests_fuzz_fuzz_milter_reply_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_cmd_SOURCES = tests/fuzz/fuzz-imap-cmd.c $(fuzz_common)
tests_fuzz_fuzz_imap_cmd_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_write_SOURCES = tests/fuzz/fuzz-imap-write.c $(fuzz_common)
tests_fuzz_fuzz_imap_write_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_mailbox_SOURCES = tests/fuzz/fuzz-imap-mailbox.c $(fuzz_common)
tests_fuzz_fuzz_imap_mailbox_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_date_SOURCES = tests/fuzz/fuzz-imap-date.c $(fuzz_common)
tests_fuzz_fuzz_imap_date_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_search_SOURCES = tests/fuzz/fuzz-imap-search.c $(fuzz_common)
tests_fuzz_fuzz_imap_search_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_imap_sort_SOURCES = tests/fuzz/fuzz-imap-sort.c $(fuzz_common)
tests_fuzz_fuzz_imap_sort_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_sieve_parse_SOURCES = tests/fuzz/fuzz-sieve-parse.c $(fuzz_common)
tests_fuzz_fuzz_sieve_parse_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_sieve_match_SOURCES = tests/fuzz/fuzz-sieve-match.c $(fuzz_common)
tests_fuzz_fuzz_sieve_match_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_mime_scan_SOURCES = tests/fuzz/fuzz-mime-scan.c $(fuzz_common)
tests_fuzz_fuzz_mime_scan_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_sasl_SOURCES = tests/fuzz/fuzz-sasl.c $(fuzz_common)
tests_fuzz_fuzz_smtp_cmd_SOURCES = tests/fuzz/fuzz-smtp-cmd.c $(fuzz_common)
tests_fuzz_fuzz_smtp_cmd_LDADD = mta/libmta.a lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_smtp_data_SOURCES = tests/fuzz/fuzz-smtp-data.c $(fuzz_common)
tests_fuzz_fuzz_smtp_data_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_bounce_SOURCES = tests/fuzz/fuzz-bounce.c $(fuzz_common)
tests_fuzz_fuzz_bounce_LDADD = mta/libmta.a lib-mail/libmtmail.a $(UNIT_LIBS)
# popstore's parsers are not in a library: each target compiles its own.
tests_fuzz_fuzz_pop3_cmd_SOURCES = tests/fuzz/fuzz-pop3-cmd.c $(fuzz_common) \
	popstore/pop3-parse.c popstore/pop3-parse.h
tests_fuzz_fuzz_lmtp_cmd_SOURCES = tests/fuzz/fuzz-lmtp-cmd.c $(fuzz_common) \
	popstore/lmtp-parse.c popstore/lmtp-parse.h
tests_fuzz_fuzz_pop3_cmd_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_lmtp_cmd_LDADD = lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_mmp_cmd_SOURCES = tests/fuzz/fuzz-mmp-cmd.c $(fuzz_common)
tests_fuzz_fuzz_mmp_cmd_LDADD = mmp/libmmp.a lib-mail/libmtmail.a $(UNIT_LIBS)
tests_fuzz_fuzz_mmp_session_SOURCES = tests/fuzz/fuzz-mmp-session.c $(fuzz_common) \
	tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h
tests_fuzz_fuzz_mmp_session_LDADD = $(MMP_LIBS) $(UNIT_LIBS)
tests_fuzz_fuzz_popstore_session_SOURCES = tests/fuzz/fuzz-popstore-session.c \
	$(fuzz_common) tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h $(popstore_daemon_sources)
tests_fuzz_fuzz_popstore_session_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/popstore
tests_fuzz_fuzz_popstore_session_LDADD = store/libmtstore.a dirsvc/libdirsvc.a \
	settings/libmtsettings.a $(MTBDB_LIBS) $(DIRSVC_LIBS) $(MTMAIL_LIBS)
tests_fuzz_fuzz_mta_session_SOURCES = tests/fuzz/fuzz-mta-session.c $(fuzz_common) \
	tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h
tests_fuzz_fuzz_mta_session_LDADD = $(MTA_LIBS) $(UNIT_LIBS)
# mailtier-load's IMAP response reader (loadgen links no daemon code).
tests_fuzz_fuzz_imap_response_SOURCES = tests/fuzz/fuzz-imap-response.c $(fuzz_common) \
	loadgen/imap-response.c loadgen/imap-response.h loadgen/errors.c loadgen/errors.h
tests_fuzz_fuzz_imap_response_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/loadgen
tests_fuzz_fuzz_imap_response_LDADD = $(UNIT_LIBS)

EXTRA_DIST += tests/fuzz/README.md tests/fuzz/corpus scripts/fuzz \
	tests/fuzz/lineio.dict tests/fuzz/dotcodec.dict \
	tests/fuzz/address.dict tests/fuzz/config.dict \
	tests/fuzz/ldap-escape.dict tests/fuzz/pwhash.dict \
	tests/fuzz/reply.dict tests/fuzz/milter-reply.dict \
	tests/fuzz/sasl.dict tests/fuzz/imap-cmd.dict \
	tests/fuzz/imap-write.dict tests/fuzz/imap-mailbox.dict \
	tests/fuzz/imap-date.dict tests/fuzz/imap-search.dict \
	tests/fuzz/imap-sort.dict tests/fuzz/sieve-parse.dict tests/fuzz/sieve-match.dict \
	tests/fuzz/mime-scan.dict \
	tests/fuzz/smtp-cmd.dict tests/fuzz/smtp-data.dict \
	tests/fuzz/bounce.dict \
	tests/fuzz/pop3-cmd.dict tests/fuzz/lmtp-cmd.dict \
	tests/fuzz/mmp-cmd.dict tests/fuzz/mmp-session.dict \
	tests/fuzz/popstore-session.dict

# ---- `make fuzz`: the libFuzzer binaries (clang; configure finds FUZZ_CC) ----
fuzz_binaries = \
	tests/fuzz/bin/fuzz-lineio \
	tests/fuzz/bin/fuzz-dotcodec \
	tests/fuzz/bin/fuzz-address \
	tests/fuzz/bin/fuzz-config \
	tests/fuzz/bin/fuzz-ldap-escape \
	tests/fuzz/bin/fuzz-pwhash \
	tests/fuzz/bin/fuzz-reply \
	tests/fuzz/bin/fuzz-milter-reply \
	tests/fuzz/bin/fuzz-imap-cmd \
	tests/fuzz/bin/fuzz-imap-write \
	tests/fuzz/bin/fuzz-imap-mailbox \
	tests/fuzz/bin/fuzz-imap-date \
	tests/fuzz/bin/fuzz-imap-search \
	tests/fuzz/bin/fuzz-imap-sort \
	tests/fuzz/bin/fuzz-sieve-parse \
	tests/fuzz/bin/fuzz-sieve-match \
	tests/fuzz/bin/fuzz-mime-scan \
	tests/fuzz/bin/fuzz-sasl \
	tests/fuzz/bin/fuzz-smtp-cmd \
	tests/fuzz/bin/fuzz-smtp-data \
	tests/fuzz/bin/fuzz-bounce \
	tests/fuzz/bin/fuzz-pop3-cmd \
	tests/fuzz/bin/fuzz-lmtp-cmd \
	tests/fuzz/bin/fuzz-mmp-cmd \
	tests/fuzz/bin/fuzz-mmp-session \
	tests/fuzz/bin/fuzz-popstore-session \
	tests/fuzz/bin/fuzz-mta-session \
	tests/fuzz/bin/fuzz-imap-response

FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
# Warnings stay on but never stop the fuzz build: clang warns where gcc
# does not, and `make check` (gcc, -Werror) is the gate for warnings.
FUZZ_COMPILE = $(FUZZ_CC) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) \
	$(CPPFLAGS) $(AM_CFLAGS) -Wno-error -O1 $(FUZZ_SANITIZE)
FUZZ_LINK = $(FUZZ_COMPILE) -fsanitize=fuzzer
FUZZ_EXTLIBS = $(LIBEVENT_OPENSSL_LIBS) $(LIBEVENT_LIBS) $(OPENSSL_LIBS) \
	$(INIH_LIBS) $(SYSTEMD_LIBS) $(LDAP_LIBS) $(CRYPT_LIBS) $(PTHREAD_LIBS)
FUZZ_LIBMAILTIER = tests/fuzz/clang/libmailtier.a
FUZZ_LIBMTSETTINGS = tests/fuzz/clang/libmtsettings.a
FUZZ_LIBMTMAIL = tests/fuzz/clang/libmtmail.a
FUZZ_LIBDIRSVC = tests/fuzz/clang/libdirsvc.a
FUZZ_LIBMMP = tests/fuzz/clang/libmmp.a
FUZZ_LIBMTSTORE = tests/fuzz/clang/libmtstore.a
FUZZ_LIBMTBDB = tests/fuzz/clang/libmtbdb.a
FUZZ_LIBMTA = tests/fuzz/clang/libmta.a
fuzz_headers = $(srcdir)/tests/fuzz/fuzz.h

# Compile the .c files in $$srcs with coverage into the archive $@.
fuzz_archive = set -e; $(MKDIR_P) tests/fuzz/clang; rm -f $@; objs=; \
	for f in $$srcs; do case $$f in *.c) \
		o=tests/fuzz/clang/`echo "$${f%.c}" | tr / -`.o; \
		echo "  FUZZCC   $$o"; \
		$(FUZZ_COMPILE) -fsanitize=fuzzer-no-link -c -o $$o $(srcdir)/$$f; \
		objs="$$objs $$o";; esac; done; \
	$(AR) $(ARFLAGS) $@ $$objs; $(RANLIB) $@

$(FUZZ_LIBMAILTIER): $(lib_libmailtier_a_SOURCES)
	@srcs='$(lib_libmailtier_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMTSETTINGS): $(settings_libmtsettings_a_SOURCES)
	@srcs='$(settings_libmtsettings_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMTMAIL): $(lib_mail_libmtmail_a_SOURCES)
	@srcs='$(lib_mail_libmtmail_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBDIRSVC): $(dirsvc_libdirsvc_a_SOURCES)
	@srcs='$(dirsvc_libdirsvc_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMMP): $(mmp_libmmp_a_SOURCES)
	@srcs='$(mmp_libmmp_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMTSTORE): $(store_libmtstore_a_SOURCES)
	@srcs='$(store_libmtstore_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMTBDB): $(lib_bdb_libmtbdb_a_SOURCES)
	@srcs='$(lib_bdb_libmtbdb_a_SOURCES)'; $(fuzz_archive)
$(FUZZ_LIBMTA): $(mta_libmta_a_SOURCES)
	@srcs='$(mta_libmta_a_SOURCES)'; $(fuzz_archive)

# fuzz_link TARGET-SOURCES...: one libFuzzer binary from the target and the
# parser sources it needs, over the archives.
fuzz_link = @$(MKDIR_P) tests/fuzz/bin; echo "  FUZZLD   $@"; $(FUZZ_LINK) -o $@

tests/fuzz/bin/fuzz-lineio: tests/fuzz/fuzz-lineio.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-lineio.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-dotcodec: tests/fuzz/fuzz-dotcodec.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-dotcodec.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-address: tests/fuzz/fuzz-address.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-address.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-config: tests/fuzz/fuzz-config.c $(fuzz_headers) $(FUZZ_LIBMTSETTINGS) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-config.c $(FUZZ_LIBMTSETTINGS) $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-ldap-escape: tests/fuzz/fuzz-ldap-escape.c dirsvc/ldap-escape.c dirsvc/ldap-escape.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-ldap-escape.c $(srcdir)/dirsvc/ldap-escape.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-pwhash: tests/fuzz/fuzz-pwhash.c dirsvc/pwhash.c dirsvc/pwhash.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-pwhash.c $(srcdir)/dirsvc/pwhash.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-reply: tests/fuzz/fuzz-reply.c lib-mail/smtp-reply.c lib-mail/smtp-reply.h lib-mail/pop3-status.c lib-mail/pop3-status.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-reply.c $(srcdir)/lib-mail/smtp-reply.c $(srcdir)/lib-mail/pop3-status.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-milter-reply: tests/fuzz/fuzz-milter-reply.c lib-mail/milter-proto.c lib-mail/milter-proto.h lib-mail/smtp-reply.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-milter-reply.c $(srcdir)/lib-mail/milter-proto.c $(srcdir)/lib-mail/smtp-reply.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-cmd: tests/fuzz/fuzz-imap-cmd.c lib-mail/imap-parse.c lib-mail/imap-parse.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-cmd.c $(srcdir)/lib-mail/imap-parse.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-write: tests/fuzz/fuzz-imap-write.c lib-mail/imap-write.c lib-mail/imap-write.h lib-mail/imap-utf7.c lib-mail/imap-utf7.h lib-mail/imap-parse.c lib-mail/imap-parse.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-write.c $(srcdir)/lib-mail/imap-write.c $(srcdir)/lib-mail/imap-utf7.c $(srcdir)/lib-mail/imap-parse.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-mailbox: tests/fuzz/fuzz-imap-mailbox.c lib-mail/imap-mailbox.c lib-mail/imap-mailbox.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-mailbox.c $(srcdir)/lib-mail/imap-mailbox.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-date: tests/fuzz/fuzz-imap-date.c lib-mail/imap-date.c lib-mail/imap-date.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-date.c $(srcdir)/lib-mail/imap-date.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-sort: tests/fuzz/fuzz-imap-sort.c lib-mail/imap-sort.c lib-mail/imap-sort.h lib-mail/imap-thread.c lib-mail/imap-thread.h lib-mail/imap-parse.c lib-mail/imap-date.c lib-mail/mime-decode.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-sort.c $(srcdir)/lib-mail/imap-sort.c $(srcdir)/lib-mail/imap-thread.c $(srcdir)/lib-mail/imap-parse.c $(srcdir)/lib-mail/imap-date.c $(srcdir)/lib-mail/mime-decode.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-sieve-parse: tests/fuzz/fuzz-sieve-parse.c lib-mail/sieve-parse.c lib-mail/sieve-parse.h lib-mail/sieve-check.c lib-mail/sieve-check.h lib-mail/sieve-run.c lib-mail/sieve-run.h lib-mail/sieve-match.c lib-mail/mime-address.c lib-mail/imap-write.c lib-mail/imap-parse.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-sieve-parse.c $(srcdir)/lib-mail/sieve-parse.c $(srcdir)/lib-mail/sieve-check.c $(srcdir)/lib-mail/sieve-run.c $(srcdir)/lib-mail/sieve-match.c $(srcdir)/lib-mail/mime-address.c $(srcdir)/lib-mail/imap-write.c $(srcdir)/lib-mail/imap-parse.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-sieve-match: tests/fuzz/fuzz-sieve-match.c lib-mail/sieve-match.c lib-mail/sieve-match.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-sieve-match.c $(srcdir)/lib-mail/sieve-match.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-imap-search: tests/fuzz/fuzz-imap-search.c lib-mail/imap-search.c lib-mail/imap-search.h lib-mail/imap-parse.c lib-mail/imap-date.c lib-mail/mime-address.c lib-mail/imap-write.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-imap-search.c $(srcdir)/lib-mail/imap-search.c $(srcdir)/lib-mail/imap-parse.c $(srcdir)/lib-mail/imap-date.c $(srcdir)/lib-mail/mime-address.c $(srcdir)/lib-mail/imap-write.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-mime-scan: tests/fuzz/fuzz-mime-scan.c lib-mail/mime-scan.c lib-mail/mime-scan.h lib-mail/imap-bodystructure.c lib-mail/imap-bodystructure.h lib-mail/mime-address.c lib-mail/imap-write.c lib-mail/imap-parse.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-mime-scan.c $(srcdir)/lib-mail/mime-scan.c $(srcdir)/lib-mail/imap-bodystructure.c $(srcdir)/lib-mail/mime-address.c $(srcdir)/lib-mail/imap-write.c $(srcdir)/lib-mail/imap-parse.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-sasl: tests/fuzz/fuzz-sasl.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-sasl.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-smtp-cmd: tests/fuzz/fuzz-smtp-cmd.c mta/smtp-parse.c mta/smtp-parse.h lib-mail/smtp-params.c lib-mail/smtp-params.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-smtp-cmd.c $(srcdir)/mta/smtp-parse.c $(srcdir)/lib-mail/smtp-params.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-smtp-data: tests/fuzz/fuzz-smtp-data.c lib-mail/smtp-content.c lib-mail/smtp-content.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-smtp-data.c $(srcdir)/lib-mail/smtp-content.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-bounce: tests/fuzz/fuzz-bounce.c mta/bounce-text.c mta/bounce-text.h lib-mail/smtp-reply.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-bounce.c $(srcdir)/mta/bounce-text.c $(srcdir)/lib-mail/smtp-reply.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-pop3-cmd: tests/fuzz/fuzz-pop3-cmd.c popstore/pop3-parse.c popstore/pop3-parse.h lib-mail/command-find.c $(fuzz_headers)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-pop3-cmd.c $(srcdir)/popstore/pop3-parse.c $(srcdir)/lib-mail/command-find.c
tests/fuzz/bin/fuzz-lmtp-cmd: tests/fuzz/fuzz-lmtp-cmd.c popstore/lmtp-parse.c popstore/lmtp-parse.h lib-mail/smtp-params.c lib-mail/smtp-params.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-lmtp-cmd.c $(srcdir)/popstore/lmtp-parse.c $(srcdir)/lib-mail/command-find.c $(srcdir)/lib-mail/smtp-params.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
tests/fuzz/bin/fuzz-mmp-cmd: tests/fuzz/fuzz-mmp-cmd.c mmp/mmp-parse.c mmp/mmp-parse.h lib-mail/pop3-login.c lib-mail/pop3-login.h mmp/mmp.h $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-mmp-cmd.c $(srcdir)/mmp/mmp-parse.c $(srcdir)/lib-mail/pop3-login.c $(srcdir)/lib-mail/command-find.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)

# Session-level targets: the real session code over the tier's library.
FUZZ_MMP_ARCHIVES = $(FUZZ_LIBMMP) $(FUZZ_LIBDIRSVC) $(FUZZ_LIBMTSETTINGS) \
	$(FUZZ_LIBMTMAIL) $(FUZZ_LIBMAILTIER)
tests/fuzz/bin/fuzz-mmp-session: tests/fuzz/fuzz-mmp-session.c tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h $(fuzz_headers) $(FUZZ_MMP_ARCHIVES)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-mmp-session.c $(FUZZ_MMP_ARCHIVES) $(FUZZ_EXTLIBS)
FUZZ_POPSTORE_ARCHIVES = $(FUZZ_LIBMTSTORE) $(FUZZ_LIBDIRSVC) $(FUZZ_LIBMTSETTINGS) \
	$(FUZZ_LIBMTBDB) $(FUZZ_LIBMTMAIL) $(FUZZ_LIBMAILTIER)
tests/fuzz/bin/fuzz-popstore-session: tests/fuzz/fuzz-popstore-session.c tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h $(popstore_daemon_sources) $(fuzz_headers) $(FUZZ_POPSTORE_ARCHIVES)
	$(fuzz_link) -I$(srcdir)/popstore $(srcdir)/tests/fuzz/fuzz-popstore-session.c \
		`for f in $(popstore_daemon_sources); do case $$f in *.c) echo $(srcdir)/$$f;; esac; done` \
		$(FUZZ_POPSTORE_ARCHIVES) $(BDB_LIBS) $(FUZZ_EXTLIBS)
FUZZ_MTA_ARCHIVES = $(FUZZ_LIBMTA) $(FUZZ_LIBDIRSVC) $(FUZZ_LIBMTSETTINGS) \
	$(FUZZ_LIBMTBDB) $(FUZZ_LIBMTMAIL) $(FUZZ_LIBMAILTIER)
tests/fuzz/bin/fuzz-mta-session: tests/fuzz/fuzz-mta-session.c tests/fuzz/fuzz-daemon.h tests/unit/test-peer.h $(fuzz_headers) $(FUZZ_MTA_ARCHIVES)
	$(fuzz_link) $(srcdir)/tests/fuzz/fuzz-mta-session.c $(FUZZ_MTA_ARCHIVES) \
		$(BDB_LIBS) $(CARES_LIBS) $(FUZZ_EXTLIBS)

if HAVE_FUZZER
fuzz: $(fuzz_binaries)
	@echo "libFuzzer targets built in tests/fuzz/bin/; run them with scripts/fuzz SECONDS"
else
fuzz:
	@echo "make fuzz needs clang with libFuzzer (Debian: clang libclang-rt-14-dev); install them and re-run configure" >&2; exit 1
endif
.PHONY: fuzz

CLEANFILES += $(fuzz_binaries) tests/fuzz/clang/*.o tests/fuzz/clang/*.a
tests/fuzz/bin/fuzz-imap-response: tests/fuzz/fuzz-imap-response.c loadgen/imap-response.c loadgen/imap-response.h loadgen/errors.c $(fuzz_headers) $(FUZZ_LIBMAILTIER)
	$(fuzz_link) -I$(srcdir)/loadgen $(srcdir)/tests/fuzz/fuzz-imap-response.c $(srcdir)/loadgen/imap-response.c $(srcdir)/loadgen/errors.c $(FUZZ_LIBMAILTIER) $(FUZZ_EXTLIBS)
