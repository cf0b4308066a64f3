# shellcheck shell=bash
# cluster/lib/pki.sh: the certificates of the local stack (sourced, not run). ECDSA P-256
# everywhere: made in milliseconds, and accepted by every Go client and by the apiserver for
# service-account tokens (ES256).

# PKI_LEAF is the start of every leaf certificate's extensions (used by the sourcing scripts).
# shellcheck disable=SC2034
PKI_LEAF="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"

# pki_ca DIR CN makes DIR/ca.{key,crt}, a CA of subject CN. A config of our own: the system
# openssl.cnf's v3_ca section would add extensions of its own.
pki_ca() {
	local dir=$1 cn=$2
	mkdir -p "${dir}"
	chmod 700 "${dir}"
	openssl ecparam -name prime256v1 -genkey -noout -out "${dir}/ca.key" 2>/dev/null
	openssl req -x509 -new -key "${dir}/ca.key" -subj "/CN=${cn}" \
		-days 3650 -sha256 -out "${dir}/ca.crt" -config <(printf '%s\n' \
			'[req]' 'distinguished_name = dn' 'x509_extensions = ca' '[dn]' '[ca]' \
			'basicConstraints = critical,CA:TRUE' \
			'keyUsage = critical,keyCertSign,cRLSign,digitalSignature' \
			'subjectKeyIdentifier = hash')
}

# pki_sign DIR NAME SUBJECT EXTENSIONS issues DIR/NAME.{key,crt} from DIR's CA.
pki_sign() {
	local dir=$1 name=$2 subj=$3 ext=$4
	openssl ecparam -name prime256v1 -genkey -noout -out "${dir}/${name}.key" 2>/dev/null
	openssl req -new -key "${dir}/${name}.key" -subj "${subj}" -out "${dir}/${name}.csr"
	openssl x509 -req -in "${dir}/${name}.csr" -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
		-extfile <(printf '%s\n' "${ext}") -out "${dir}/${name}.crt" 2>/dev/null
	rm -f "${dir}/${name}.csr"
}

# pki_kubeconfig FILE SERVER CA CLIENT_CRT CLIENT_KEY writes a self-contained kubeconfig
# (certificates embedded, so it can be copied or mounted anywhere), mode 600.
pki_kubeconfig() {
	local file=$1 server=$2 ca=$3 crt=$4 key=$5 tmp=$1.tmp
	cat >"${tmp}" <<-YAML
		apiVersion: v1
		kind: Config
		clusters:
		- name: stackservices-dev
		  cluster:
		    server: ${server}
		    certificate-authority-data: $(base64 -w0 "${ca}")
		users:
		- name: user
		  user:
		    client-certificate-data: $(base64 -w0 "${crt}")
		    client-key-data: $(base64 -w0 "${key}")
		contexts:
		- name: stackservices-dev
		  context:
		    cluster: stackservices-dev
		    user: user
		current-context: stackservices-dev
	YAML
	chmod 600 "${tmp}"
	mv -f "${tmp}" "${file}"
}
